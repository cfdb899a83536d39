package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// postRPC posts one call to /rpc with a bearer token (none when empty) and
// returns the decoded answer.
func postRPC(t *testing.T, url, token, method, params string) (result json.RawMessage, data map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var a struct {
		Result json.RawMessage
		Error  *struct{ Data map[string]any }
	}
	require.NoError(t, json.Unmarshal(body, &a), string(body))
	if a.Error != nil {
		return nil, a.Error.Data
	}
	return a.Result, nil
}

// The gateway starts with an auth file that grants the run and upload
// methods by name, and the grant works; AUTH_REQUIRED and
// VERSION_INCOMPATIBLE carry the error classes' details, with the URLs the
// operator configured.
func TestSeedsDetailsThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	token, hash := newToken(t)
	authFile := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.WriteFile(authFile, []byte("identities:\n  - name: ci\n    class: service\n    tokens: ["+hash+"]\n"+
		"    methods: [list_skills, get_run, watch_run, list_runs, cancel_run, begin_upload, upload_chunk, finish_upload]\n"+
		"    namespaces: [\"*\"]\n"), 0o600))
	const authURL, upgradeURL = "https://idp.example.com/authorize", "https://example.com/upgrade"
	g := startGateway(t, "--auth-file", authFile, "--sandbox-workers", "0",
		"--auth-authorization-url", authURL, "--protocol-upgrade-url", upgradeURL)
	url := "http://" + g.addrs["http"] + "/rpc"

	res, data := postRPC(t, url, token, "list_runs", `{}`)
	require.Nil(t, data, "list_runs is granted")
	assert.JSONEq(t, `{"runs":[],"next_cursor":null}`, string(res))
	_, data = postRPC(t, url, token, "get_run", `{"run_id":"run_0123456789abcdef0123456789abcdef"}`)
	assert.Equal(t, "RUN_NOT_FOUND", data["string_code"], "get_run is granted")
	_, data = postRPC(t, url, token, "read_blob", `{}`)
	assert.Equal(t, "PERMISSION_DENIED", data["string_code"], "what is not listed stays refused")

	_, data = postRPC(t, url, "", "list_runs", `{}`)
	assert.Equal(t, "AUTH_REQUIRED", data["string_code"])
	assert.Equal(t, "bearer", data["required_auth_type"])
	assert.Equal(t, []any{"list_runs"}, data["scopes"])
	assert.Equal(t, authURL, data["authorization_url"])
	assert.IsType(t, "", data["details"], "details stays the transport's string")

	c, err := session.Dial(t.Context(), g.addrs["tcp"], nil, session.ClientConfig(), nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Call(t.Context(), "Initialize", map[string]any{"protocol_version": "2.0"})
	var te *transport.Error
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Equal(t, "VERSION_INCOMPATIBLE", te.EffectiveCode())
	for k, want := range map[string]string{"descriptor_version": `"2.0"`, "consumer_supported_range": `"1.x"`, "upgrade_url": `"` + upgradeURL + `"`} {
		assert.JSONEq(t, want, string(te.Extra[k]), k)
	}
}

// A real run past its timeout fails with EXECUTION_TIMEOUT carrying
// timeout_ms and elapsed_ms.
func TestExecutionTimeoutDetailsThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--skills-dir", "../../examples/skills", "--sandbox-workers", "1")
	res, data := postRPC(t, "http://"+g.addrs["http"]+"/rpc", "", "run_code",
		`{"language":"python","code":"import time\ndef main(args):\n    time.sleep(30)\n","timeout_ms":500}`)
	require.Nil(t, data)
	var run struct {
		Status string
		Error  struct {
			Type    string
			Details struct {
				TimeoutMS int64 `json:"timeout_ms"`
				ElapsedMS int64 `json:"elapsed_ms"`
			}
		}
	}
	require.NoError(t, json.Unmarshal(res, &run), string(res))
	assert.Equal(t, "failed", run.Status)
	assert.Equal(t, "EXECUTION_TIMEOUT", run.Error.Type)
	assert.EqualValues(t, 500, run.Error.Details.TimeoutMS)
	assert.Positive(t, run.Error.Details.ElapsedMS, string(res))
}
