package dispatch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// extra decodes a data member of a wire error ("" when absent).
func extra(t *testing.T, e *transport.Error, key string) any {
	t.Helper()
	raw, ok := e.Extra[key]
	if !ok {
		return nil
	}
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), key)
	return v
}

// wireErr is the *transport.Error of a framed call's error.
func wireErr(t *testing.T, err error) *transport.Error {
	t.Helper()
	var te *transport.Error
	require.True(t, errors.As(err, &te), "%v", err)
	return te
}

// AUTH_REQUIRED carries the error classes' details as data members:
// required_auth_type, scopes (the method the credential must grant; none
// for Initialize) and authorization_url when configured, on every front
// door. data.details stays the transport's string.
func TestAuthRequiredDetails(t *testing.T) {
	const url = "https://idp.example.com/authorize"
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(authFile(false)), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	for _, configured := range []string{"", url} {
		e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
			o.Authn = store
			o.AuthorizationURL = configured
		})
		check := func(name string, we *transport.Error, scopes []any) {
			require.NotNil(t, we, name)
			assert.Equal(t, StringAuthRequired, we.EffectiveCode(), name)
			assert.NotEmpty(t, we.Details, name)
			assert.Equal(t, "bearer", extra(t, we, "required_auth_type"), name)
			assert.Equal(t, scopes, extra(t, we, "scopes"), name)
			if configured == "" {
				assert.NotContains(t, we.Extra, "authorization_url", name)
			} else {
				assert.Equal(t, url, extra(t, we, "authorization_url"), name)
			}
		}
		_, we := e.httpFront("").call("describe_skill", `{"name":"acme.math.add"}`)
		check("http, no token", we, []any{"describe_skill"})
		_, we = e.httpFront("Bearer sgt_nope").call("ListSkills", `{}`)
		check("http, bad token", we, []any{"list_skills"})
		_, we = frontCaller{t, e.d.Front("mcp"), nil}.call("list_skills", `{}`)
		check("mcp front", we, []any{"list_skills"})
		check("framed Initialize", wireErr(t, initialize(e.framedRaw(), "sgt_nope")), []any{})
	}
}

// VERSION_INCOMPATIBLE carries descriptor_version (the version asked
// for), consumer_supported_range (what the gateway speaks) and
// upgrade_url when configured.
func TestVersionIncompatibleDetails(t *testing.T) {
	const url = "https://example.com/upgrade"
	for _, configured := range []string{"", url} {
		e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) { o.UpgradeURL = configured })
		_, err := e.framedRaw().Call(t.Context(), MethodInitialize, map[string]any{"protocol_version": "2.0"})
		we := wireErr(t, err)
		assert.Equal(t, StringVersionIncompatible, we.EffectiveCode())
		assert.Equal(t, "2.0", extra(t, we, "descriptor_version"))
		assert.Equal(t, "1.x", extra(t, we, "consumer_supported_range"))
		if configured == "" {
			assert.NotContains(t, we.Extra, "upgrade_url")
		} else {
			assert.Equal(t, url, extra(t, we, "upgrade_url"))
		}
	}
}

// A run past its timeout fails with EXECUTION_TIMEOUT whose details are
// timeout_ms (the run's own, else the gateway's default) and elapsed_ms.
func TestExecutionTimeoutDetails(t *testing.T) {
	timedOut := func(sandbox.Job) (*sandbox.Result, error) {
		return &sandbox.Result{Status: sandbox.StatusFailed, Duration: 301 * time.Millisecond,
			Error: &sandbox.RunError{Type: runerror.Timeout, Message: "the run exceeded its timeout of 300ms and was killed"}}, nil
	}
	r := &fakeRunner{result: timedOut}
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Runner = r
		o.Info.Limits.DefaultRunTimeoutMS = 30_000
	})
	for _, tc := range []struct{ params, timeout string }{
		{`{"language":"python","code":"x","timeout_ms":300}`, "300"},
		{`{"language":"python","code":"x"}`, "30000"},
	} {
		for _, c := range e.fronts() {
			res, we := c.call("run_code", tc.params)
			require.Nil(t, we)
			var out struct {
				Status string
				Error  struct {
					Type    string
					Details json.RawMessage
				}
				Retry *transport.Retry
			}
			require.NoError(t, json.Unmarshal(res, &out))
			assert.Equal(t, "failed", out.Status)
			assert.Equal(t, runerror.Timeout, out.Error.Type)
			assert.JSONEq(t, `{"timeout_ms":`+tc.timeout+`,"elapsed_ms":301}`, string(out.Error.Details), c.name())
			assert.NotNil(t, out.Retry, "a timeout keeps its retry hint")
		}
	}
}
