package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The batch example of the JSON-RPC 2.0 specification (spec 003), on
// methods of ours: notifications get no entry, an invalid member gets
// -32600 with id null, an unknown method -32601 with its id.
func TestHTTPBatch(t *testing.T) {
	e := newEnv(t, examplesDir())
	status, out := postRPC(t, e.http.URL, `[
		{"jsonrpc":"2.0","method":"list_skills","params":{"limit":1},"id":"1"},
		{"jsonrpc":"2.0","method":"load_skills_protocol_guide","params":{}},
		{"jsonrpc":"2.0","method":"describe_skill","params":{"name":"acme.math.add","detail":"manifest"},"id":2},
		{"foo":"boo"},
		{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
		{"jsonrpc":"2.0","method":"load_skills_protocol_guide","id":"9"}
	]`)
	require.Equal(t, http.StatusOK, status)
	var resp []struct {
		ID     json.RawMessage
		Result json.RawMessage
		Error  *struct {
			Code int
			Data struct {
				StringCode string `json:"string_code"`
			}
		}
	}
	require.NoError(t, json.Unmarshal(out, &resp), "%s", out)
	require.Len(t, resp, 5)
	assert.Equal(t, `"1"`, string(resp[0].ID))
	assert.NotNil(t, resp[0].Result)
	assert.Equal(t, `2`, string(resp[1].ID), "numeric ids are echoed as numbers")
	assert.Equal(t, `null`, string(resp[2].ID))
	assert.Equal(t, -32600, resp[2].Error.Code)
	assert.Equal(t, `"5"`, string(resp[3].ID))
	assert.Equal(t, -32601, resp[3].Error.Code)
	assert.Equal(t, "JSONRPC_METHOD_NOT_FOUND", resp[3].Error.Data.StringCode)
	assert.Equal(t, `"9"`, string(resp[4].ID), "params may be omitted over HTTP")
	assert.NotNil(t, resp[4].Result)
}

func TestHTTPStatuses(t *testing.T) {
	e := newEnv(t, examplesDir())
	cases := []struct {
		name, body string
		status     int
		code       int
	}{
		{"malformed JSON", `{"jsonrpc":"2.0",`, http.StatusBadRequest, -32700},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"method\":\"x\xff\"}", http.StatusBadRequest, -32700},
		{"empty body", ``, http.StatusBadRequest, -32700},
		{"empty batch", `[]`, http.StatusOK, -32600},
		{"not an object", `"hello"`, http.StatusOK, -32600},
		{"object id", `{"jsonrpc":"2.0","method":"list_skills","id":{}}`, http.StatusOK, -32600},
		{"wrong version", `{"jsonrpc":"1.0","method":"list_skills","id":1}`, http.StatusOK, -32600},
		{"case matters", `{"JSONRPC":"2.0","METHOD":"list_skills","id":1}`, http.StatusOK, -32600},
		{"positional params", `{"jsonrpc":"2.0","method":"list_skills","params":[1],"id":1}`, http.StatusOK, -32602},
		{"too large", `{"jsonrpc":"2.0","method":"list_skills","params":{"x":"` + strings.Repeat("a", testMaxMessage) + `"},"id":1}`, http.StatusRequestEntityTooLarge, -32600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := postRPC(t, e.http.URL, tc.body)
			assert.Equal(t, tc.status, status)
			var resp struct {
				Error struct{ Code int }
			}
			require.NoError(t, json.Unmarshal(out, &resp), "%s", out)
			assert.Equal(t, tc.code, resp.Error.Code)
		})
	}

	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"list_skills","params":{}}`,
		`[{"jsonrpc":"2.0","method":"list_skills"},{"jsonrpc":"2.0","method":"nope"}]`,
	} {
		status, out := postRPC(t, e.http.URL, body)
		assert.Equal(t, http.StatusNoContent, status, "notifications only: %s", body)
		assert.Empty(t, out)
	}

	resp, err := http.Get(e.http.URL + "/rpc")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	resp, err = http.Post(e.http.URL+"/other", "application/json", bytes.NewBufferString(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	var many strings.Builder
	many.WriteString("[")
	for i := range maxBatch + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`{"jsonrpc":"2.0","method":"list_skills","id":1}`)
	}
	many.WriteString("]")
	status, out := postRPC(t, e.http.URL, many.String())
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(out), "at most 100")
}

// A panicking method answers INTERNAL_ERROR on both front doors, is
// counted, and the connection lives on.
func TestPanicRecovered(t *testing.T) {
	e := newEnv(t, "")
	e.d.Register("boom", nil, func(context.Context, *dispatch.Call) (any, error) { panic("kaboom") })
	for _, c := range e.fronts() {
		_, err := c.call("boom", `{}`)
		require.NotNil(t, err)
		assert.Equal(t, "INTERNAL_ERROR", err.EffectiveCode())
		assert.NotContains(t, err.Message+err.Details, "kaboom")
		_, err = c.call("list_skills", `{}`)
		assert.Nil(t, err)
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(e.metrics.Panics))
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "boom", "INTERNAL_ERROR")))
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("framed", "list_skills", "ok")))
}

// Refused credentials are protocol errors (200, AUTH_REQUIRED) with a
// Bearer challenge; a good token, in any spelling of the scheme, passes.
func TestAuthChallenge(t *testing.T) {
	const token = "sgt_agent-token-for-tests"
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte("identities:\n  - name: agent\n    class: agent\n    tokens: ["+
		auth.HashToken(token)+"]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n"), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) { o.Authn = store })
	for name, tc := range map[string]struct {
		header, want string
	}{
		"no token":     {"", "AUTH_REQUIRED"},
		"bad token":    {"Bearer sgt_nope", "AUTH_REQUIRED"},
		"basic scheme": {"Basic dXNlcjpwdw==", "AUTH_REQUIRED"},
		"good token":   {"Bearer " + token, "ok"},
		"lowercase":    {"bearer " + token, "ok"},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.http.URL+"/rpc", strings.NewReader(listCall))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var a rpcAnswer
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
			assert.Equal(t, http.StatusOK, resp.StatusCode, "auth failures are protocol errors")
			assert.Equal(t, tc.want, a.code())
			if tc.want != "ok" {
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "list_skills", "AUTH_REQUIRED")))
}

// cannedRunner completes every run at once.
type cannedRunner struct{}

func (cannedRunner) Run(context.Context, sandbox.Job) (*sandbox.Result, error) {
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
}

// A streamed run needs server-sent events: a call that cannot have them
// is told how to ask; one with Accept: text/event-stream gets its events,
// then the response.
func TestStreamNeedsEventStream(t *testing.T) {
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) { o.Runner = cannedRunner{} })
	const call = `{"jsonrpc":"2.0","id":"s1","method":"run_code","params":{"language":"python","code":"x","stream":true}}`
	status, a, out := post(t, e.http.URL, call, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", a.code(), "%s", out)
	assert.Contains(t, a.Error.Data.Details, "Accept: text/event-stream")

	status, _, out = post(t, e.http.URL, call, map[string][]string{"Accept": {"text/event-stream"}})
	assert.Equal(t, http.StatusOK, status)
	body := string(out)
	assert.Contains(t, body, "event: run_event\ndata: ")
	assert.Contains(t, body, `"request_id":"s1"`)
	assert.Contains(t, body, `"type":"finished"`)
	assert.Less(t, strings.Index(body, "event: run_event"), strings.Index(body, "event: response"), "the events come first")
}
