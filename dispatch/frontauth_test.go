package dispatch

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
)

// AuthenticateRequest reads the bearer token, answers the identity, and
// counts each refusal once under its own front door's label and reason;
// Credentials refuses the same requests without counting them.
func TestFrontAuthenticateRequest(t *testing.T) {
	a := newAuthEnv(t)
	f := a.d.Front(metrics.FrontMCP)
	req := func(authorization string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		return r
	}
	failures := func(reason string) float64 {
		return testutil.ToFloat64(a.metrics.AuthFailures.WithLabelValues(metrics.FrontMCP, reason))
	}

	id, err := f.AuthenticateRequest(req("Bearer " + tokenAgent))
	require.NoError(t, err)
	assert.Equal(t, "agent-runtime", id.Name())
	id, err = f.AuthenticateRequest(req("BEARER   " + tokenAgent + " "))
	require.NoError(t, err, "the scheme in any case, the token trimmed")
	assert.Equal(t, "agent-runtime", id.Name())
	assert.Zero(t, failures("invalid")+failures("missing"))

	_, err = f.AuthenticateRequest(req("Basic dXNlcjpwdw=="))
	assert.ErrorIs(t, err, auth.ErrBadCredentials)
	_, err = f.AuthenticateRequest(req("Bearer sgt_nope"))
	assert.Equal(t, auth.ReasonInvalid, auth.Reason(err))
	assert.Equal(t, 1.0, failures("invalid"))
	_, err = f.AuthenticateRequest(req(""))
	assert.Equal(t, auth.ReasonMissing, auth.Reason(err))
	assert.Equal(t, 1.0, failures("missing"))

	_, err = f.Credentials(req("Bearer sgt_nope"))
	assert.Equal(t, auth.ReasonInvalid, auth.Reason(err))
	_, err = f.Credentials(req("Basic dXNlcjpwdw=="))
	assert.ErrorIs(t, err, auth.ErrBadCredentials)
	assert.Equal(t, 1.0, failures("invalid"), "Credentials counts nothing")

	_, err = f.Authenticate("sgt_nope", nil)
	assert.Equal(t, auth.ReasonInvalid, auth.Reason(err))
	assert.Equal(t, 2.0, failures("invalid"))
	id, err = f.Authenticate(tokenLimited, nil)
	require.NoError(t, err)
	assert.Equal(t, "dashboard", id.Name())
	assert.Equal(t, 2.0, failures("invalid"))
}
