package httpfront

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
)

// serveHTTP starts another HTTP front door of the env's dispatcher with
// opts (body and answer limits default to the env's).
func (e *env) serveHTTP(opts Options) (*Server, *httptest.Server) {
	e.t.Helper()
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = testMaxMessage
	}
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = testMaxMessage
	}
	front := New(e.d.Front(metrics.FrontHTTP), opts)
	srv := httptest.NewServer(WithAccessLog(front, zerolog.Nop())) // as cmd serves it
	e.t.Cleanup(srv.Close)
	return front, srv
}

// rpcAnswer is one JSON-RPC answer object as a test reads it.
type rpcAnswer struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
		Data    struct {
			StringCode string `json:"string_code"`
			Details    string
			Retry      *struct {
				SuggestedDelayMS int `json:"suggested_delay_ms"`
			}
		}
	}
}

func (a rpcAnswer) code() string {
	if a.Error == nil {
		return "ok"
	}
	return a.Error.Data.StringCode
}

// post sends body to /rpc with the given headers ("Host" sets the Host
// line) and returns the status and the decoded single answer, if any.
func post(t *testing.T, url, body string, headers map[string][]string) (int, rpcAnswer, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/rpc", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range headers {
		switch {
		case k == "Host":
			req.Host = vs[0]
		case vs == nil:
			req.Header.Del(k)
		default:
			req.Header[k] = vs
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var a rpcAnswer
	if len(out) > 0 && out[0] == '{' {
		require.NoError(t, json.Unmarshal(out, &a), "%s", out)
	}
	return resp.StatusCode, a, out
}

const listCall = `{"jsonrpc":"2.0","method":"list_skills","params":{},"id":1}`

// A browser can be made to post a form (text/plain), to send another
// origin's request, or to reach a loopback listener under a rebound host
// name: each is refused with 403 and a JSON-RPC error, before any call
// runs, and counted; well-formed requests pass.
func TestHTTPBrowserGuards(t *testing.T) {
	e := newEnv(t, "")
	_, srv := e.serveHTTP(Options{
		AllowedOrigins: []string{"https://App.Example.com/"},
		AllowedHosts:   []string{"gw.internal"},
	})
	h := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = append(m[kv[i]], kv[i+1])
		}
		return m
	}
	cases := []struct {
		name    string
		headers map[string][]string
		reason  string // refusal metric label; empty: served
	}{
		{"json", nil, ""},
		{"json with charset", h("Content-Type", "application/json; charset=utf-8"), ""},
		{"json in capitals", h("Content-Type", "Application/JSON"), ""},
		{"no content type", map[string][]string{"Content-Type": nil}, "content_type"},
		{"form post", h("Content-Type", "text/plain"), "content_type"},
		{"urlencoded form", h("Content-Type", "application/x-www-form-urlencoded"), "content_type"},
		{"json suffix", h("Content-Type", "application/json-seq"), "content_type"},
		{"two content types", h("Content-Type", "application/json", "Content-Type", "text/plain"), "content_type"},
		{"allowed origin", h("Origin", "https://app.example.com"), ""},
		{"other origin", h("Origin", "https://evil.example"), "origin"},
		{"null origin", h("Origin", "null"), "origin"},
		{"allowed and other origin", h("Origin", "https://app.example.com", "Origin", "https://evil.example"), "origin"},
		{"localhost", h("Host", "localhost:8080"), ""},
		{"localhost subdomain", h("Host", "api.localhost"), ""},
		{"loopback v4", h("Host", "127.0.0.2:1"), ""},
		{"loopback v6", h("Host", "[::1]:8080"), ""},
		{"allowed host", h("Host", "GW.internal:443"), ""},
		{"rebound name", h("Host", "evil.example:8080"), "host"},
		{"localhost prefix", h("Host", "localhost.evil.example"), "host"},
		{"lan address", h("Host", "192.168.1.10"), "host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues(tc.reason))
			status, a, out := post(t, srv.URL, listCall, tc.headers)
			if tc.reason == "" {
				assert.Equal(t, http.StatusOK, status, "%s", out)
				assert.Equal(t, "ok", a.code(), "%s", out)
				return
			}
			assert.Equal(t, http.StatusForbidden, status, "%s", out)
			assert.Equal(t, dispatch.StringPermissionDenied, a.code(), "%s", out)
			assert.Equal(t, "null", string(a.ID))
			assert.NotEmpty(t, a.Error.Data.Details)
			assert.Equal(t, before+1, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues(tc.reason)))
		})
	}
	assert.Zero(t, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "list_skills", "PERMISSION_DENIED")),
		"refused requests run no call")
}

func TestHTTPOptionsValidate(t *testing.T) {
	assert.NoError(t, Options{AllowedOrigins: []string{"https://a.example", "http://localhost:3000/"}, AllowedHosts: []string{"gw.example"}}.Validate())
	for _, bad := range []Options{
		{AllowedOrigins: []string{"a.example"}},
		{AllowedOrigins: []string{"ftp://a.example"}},
		{AllowedOrigins: []string{"https://a.example/path"}},
		{AllowedOrigins: []string{"https://"}},
		{AllowedHosts: []string{"gw.example:443"}},
		{AllowedHosts: []string{""}},
	} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
}

// Two Authorization headers are ambiguous: 400, not first-wins.
func TestHTTPTwoAuthorizationHeaders(t *testing.T) {
	e := newEnv(t, "")
	status, a, out := post(t, e.http.URL, listCall, map[string][]string{"Authorization": {"Bearer a", "Bearer b"}})
	assert.Equal(t, http.StatusBadRequest, status, "%s", out)
	assert.Equal(t, "JSONRPC_INVALID_REQUEST", a.code())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("duplicate_authorization")))
}

// A member given twice is refused over HTTP as on the framed transport,
// in the envelope and in params alike, whatever its spelling.
func TestDuplicateMembersRefusedOnEveryFront(t *testing.T) {
	e := newEnv(t, examplesDir())
	envelopes := []struct {
		body, id string
	}{
		{`{"jsonrpc":"2.0","method":"list_skills","method":"read_blob","params":{},"id":"a"}`, `"a"`},
		{`{"jsonrpc":"2.0","method":"list_skills","params":{},"id":"a","id":"b"}`, `null`},
		{`{"jsonrpc":"2.0","method":"list_skills","params":{},"params":{},"id":7}`, `7`},
		{`{"jsonrpc":"2.0","jsonrpc":"2.0","method":"list_skills","params":{},"id":7}`, `7`},
		{`{"jsonrpc":"2.0","method":"list_skills","me\u0074hod":"read_blob","params":{},"id":7}`, `7`},
	}
	for _, tc := range envelopes {
		status, a, out := post(t, e.http.URL, tc.body, nil)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "JSONRPC_INVALID_REQUEST", a.code(), "%s", out)
		assert.Contains(t, a.Error.Data.Details, "duplicate member")
		assert.Equal(t, tc.id, string(a.ID), "%s", tc.body)
	}
	status, out := postRPC(t, e.http.URL, `[`+envelopes[0].body+`,`+listCall+`]`)
	assert.Equal(t, http.StatusOK, status)
	var batch []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &batch))
	require.Len(t, batch, 2)
	assert.Equal(t, "JSONRPC_INVALID_REQUEST", batch[0].code())
	assert.Equal(t, "ok", batch[1].code())

	for _, c := range e.fronts() {
		for _, params := range []string{
			`{"name":"acme.math.add","name":"other.skill"}`,
			`{"name":"acme.math.add","n\u0061me":"other.skill"}`,
		} {
			_, err := c.call("describe_skill", params)
			require.NotNil(t, err, "%s: %s", c.name(), params)
			assert.Equal(t, "JSONRPC_INVALID_PARAMS", err.EffectiveCode(), c.name())
			assert.Contains(t, err.Details, `"name" is given twice`, c.name())
		}
	}
}
