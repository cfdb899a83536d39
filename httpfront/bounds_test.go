package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/transport"
)

// sizedBody is a list_skills call padded with spaces to exactly n bytes.
func sizedBody(t *testing.T, n int) string {
	t.Helper()
	require.GreaterOrEqual(t, n, len(listCall))
	return listCall[:len(listCall)-1] + strings.Repeat(" ", n-len(listCall)) + "}"
}

// postChunked sends body without a Content-Length (chunked), so that
// only reading it can tell its size.
func postChunked(t *testing.T, url, body string) (int, rpcAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/rpc", io.MultiReader(strings.NewReader(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	return resp.StatusCode, a
}

// A body of exactly --max-message-size bytes is served; one byte more is
// refused with 413, whether its length is declared or only read.
func TestHTTPBodyAtTheLimit(t *testing.T) {
	e := newEnv(t, "")
	_, srv := e.serveHTTP(Options{MaxBodyBytes: 200})
	status, a, out := post(t, srv.URL, sizedBody(t, 200), nil)
	assert.Equal(t, http.StatusOK, status, "%s", out)
	assert.Equal(t, "ok", a.code())
	status, a = postChunked(t, srv.URL, sizedBody(t, 200))
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", a.code())

	status, a, _ = post(t, srv.URL, sizedBody(t, 201), nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Equal(t, transport.StringInvalidRequest, a.code())
	assert.Contains(t, a.Error.Data.Details, "limit of 200 bytes")
	status, a = postChunked(t, srv.URL, sizedBody(t, 201))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, a.Error.Data.Details, "limit of 200 bytes")
	assert.Equal(t, 2.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("too_large")))
}

// registerSized adds a method "sized" answering {"s":"xx…"} with n x's.
func registerSized(e *env) {
	e.d.Register("sized", nil, func(_ context.Context, c *dispatch.Call) (any, error) {
		var p struct{ N int }
		if err := json.Unmarshal(c.Params, &p); err != nil {
			return nil, err
		}
		return map[string]string{"s": strings.Repeat("x", p.N)}, nil
	})
}

func sizedCall(id string, n int) string {
	return `{"jsonrpc":"2.0","method":"sized","params":{"n":` + strconv.Itoa(n) + `},"id":` + id + `}`
}

// An answer of exactly the message size limit is sent; one byte more is
// replaced by RESPONSE_TOO_LARGE with the call's id.
func TestHTTPAnswerAtTheLimit(t *testing.T) {
	e := newEnv(t, "")
	registerSized(e)
	const limit = 2000
	_, srv := e.serveHTTP(Options{MaxResponseBytes: limit})
	_, a, out := post(t, srv.URL, sizedCall("1", 100), nil)
	require.Equal(t, "ok", a.code(), "%s", out)
	n := limit - (len(out) - 100) // the answer's bytes besides the x's

	_, a, out = post(t, srv.URL, sizedCall("1", n), nil)
	assert.Equal(t, "ok", a.code())
	assert.Len(t, out, limit)

	_, a, out = post(t, srv.URL, sizedCall("1", n+1), nil)
	assert.Equal(t, transport.StringResponseTooLarge, a.code(), "%.200s", out)
	assert.Equal(t, "1", string(a.ID))
	assert.Contains(t, a.Error.Data.Details, "result of "+strconv.Itoa(limit+1)+" bytes exceeds the limit of 2000 bytes")
}

// A batch's answer is bounded as a whole: answers are accepted while they
// fit beside the room kept for the error answers of the calls after them
// (the longest fallback answer with the call's id, and a comma). Here the
// first answer fills the body but for that room exactly, so it stands;
// one byte more and it is replaced.
func TestHTTPBatchAnswerAtTheLimit(t *testing.T) {
	e := newEnv(t, "")
	registerSized(e)
	const limit = 3000
	_, srv := e.serveHTTP(Options{MaxResponseBytes: limit})
	answers := func(n int) []rpcAnswer {
		status, out := postRPC(t, srv.URL, "["+sizedCall("1", n)+","+sizedCall("2", limit)+"]")
		require.Equal(t, http.StatusOK, status)
		var as []rpcAnswer
		require.NoError(t, json.Unmarshal(out, &as), "%s", out)
		require.Len(t, as, 2)
		assert.Equal(t, transport.StringResponseTooLarge, as[1].code())
		return as
	}
	_, a, out := post(t, srv.URL, sizedCall("1", 10), nil)
	require.Equal(t, "ok", a.code())
	first := len(out) - 10
	room := newFallbacks(limit).overhead + len("2") + len(",")
	// brackets, the first answer and its comma, the second call's room
	n := limit - 2 - first - 1 - room

	as := answers(n)
	assert.Equal(t, "ok", as[0].code(), "an answer that fits exactly")
	as = answers(n + 1)
	assert.Equal(t, transport.StringResponseTooLarge, as[0].code(), "one byte more")
	assert.Equal(t, "1", string(as[0].ID))
}

// A request whose error answers alone reach the limit exactly is still
// run; only one past it is refused whole, before anything runs.
func TestHTTPOverCapBoundary(t *testing.T) {
	e := newEnv(t, "")
	registerSized(e)
	id := `"` + strings.Repeat("i", 50) + `"`
	call := sizedCall(id, 5000)
	// The room kept for a call is its longest fallback answer with its id;
	// the fallback's details name the limit, so find the limit whose room
	// is the limit itself.
	limit := 0
	for l := 100; l < 2000 && limit == 0; l++ {
		if newFallbacks(l).overhead+len(id) == l {
			limit = l
		}
	}
	require.NotZero(t, limit)
	_, srv := e.serveHTTP(Options{MaxResponseBytes: limit})
	_, a, out := post(t, srv.URL, call, nil)
	assert.Equal(t, id, string(a.ID), "%s", out)
	assert.Equal(t, transport.StringResponseTooLarge, a.code(), "the answer does not fit, its error does")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "sized", "ok")), "it ran")

	_, srv = e.serveHTTP(Options{MaxResponseBytes: limit - 1})
	_, a, out = post(t, srv.URL, call, nil)
	assert.Equal(t, "null", string(a.ID), "%s", out)
	assert.Equal(t, transport.StringResponseTooLarge, a.code())
	assert.Contains(t, a.Error.Data.Details, "the error answers alone")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "sized", "ok")), "nothing ran")
}

// A batch of exactly 100 calls is served.
func TestHTTPBatchOfAHundred(t *testing.T) {
	e := newEnv(t, "")
	calls := make([]string, 100)
	for i := range calls {
		calls[i] = `{"jsonrpc":"2.0","method":"load_skills_protocol_guide","id":` + strconv.Itoa(i) + `}`
	}
	_, srv := e.serveHTTP(Options{MaxBodyBytes: 1 << 20, MaxResponseBytes: 1 << 24})
	status, out := postRPC(t, srv.URL, "["+strings.Join(calls, ",")+"]")
	require.Equal(t, http.StatusOK, status)
	var as []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &as), "%.300s", out)
	require.Len(t, as, 100)
	for i, a := range as {
		assert.Equal(t, strconv.Itoa(i), string(a.ID))
		assert.Equal(t, "ok", a.code())
	}
}

// Ids and params as plain JSON-RPC 2.0 allows them: a number or null id
// is echoed (a null id is a call, not a notification), a boolean id is
// refused with id null; null params are no params; whitespace before a
// batch or params is no matter.
func TestHTTPIdsAndParamsShapes(t *testing.T) {
	e := newEnv(t, "")
	for _, tc := range []struct {
		body, id, code string
	}{
		{`{"jsonrpc":"2.0","method":"list_skills","id":-3}`, `-3`, "ok"},
		{`{"jsonrpc":"2.0","method":"list_skills","id":0}`, `0`, "ok"},
		{`{"jsonrpc":"2.0","method":"list_skills","id":null}`, `null`, "ok"},
		{`{"jsonrpc":"2.0","method":"list_skills","id":true}`, `null`, transport.StringInvalidRequest},
		{`{"jsonrpc":"2.0","method":"list_skills","id":[1]}`, `null`, transport.StringInvalidRequest},
		{`{"jsonrpc":"2.0","method":"list_skills","params":null,"id":4}`, `4`, "ok"},
		{`{"jsonrpc":"2.0","method":"list_skills","params":` + " \n\t\r" + `{},"id":5}`, `5`, "ok"},
		{`{"jsonrpc":"2.0","method":"list_skills","params":"x","id":6}`, `6`, transport.StringInvalidParams},
		{`{"jsonrpc":"2.0","method":7,"id":8}`, `8`, transport.StringInvalidRequest},
	} {
		status, a, out := post(t, e.http.URL, tc.body, nil)
		assert.Equal(t, http.StatusOK, status, tc.body)
		assert.Equal(t, tc.id, string(a.ID), "%s: %s", tc.body, out)
		assert.Equal(t, tc.code, a.code(), "%s: %s", tc.body, out)
	}
	status, out := postRPC(t, e.http.URL, " \r\n\t["+listCall+"]")
	assert.Equal(t, http.StatusOK, status)
	var as []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &as), "a batch after whitespace: %s", out)
	require.Len(t, as, 1)
	assert.Equal(t, "ok", as[0].code())
}

// Another endpoint mounted with Handle is behind the same Origin and
// Authorization rules as /rpc, whatever its HTTP method.
func TestHandleIsGuarded(t *testing.T) {
	e := newEnv(t, "")
	front, _ := e.serveHTTP(Options{AllowedOrigins: []string{"https://app.example"}})
	front.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("served"))
	}))
	for _, tc := range []struct {
		header map[string][]string
		status int
		body   string
	}{
		{nil, http.StatusOK, "served"},
		{map[string][]string{"Origin": {"https://app.example"}}, http.StatusOK, "served"},
		{map[string][]string{"Origin": {"https://evil.example"}}, http.StatusForbidden, dispatch.StringPermissionDenied},
		{map[string][]string{"Authorization": {"Bearer a", "Bearer b"}}, http.StatusBadRequest, transport.StringInvalidRequest},
	} {
		r, err := http.NewRequest(http.MethodGet, "/mcp", nil)
		require.NoError(t, err)
		for k, v := range tc.header {
			r.Header[k] = v
		}
		w := newRecorder()
		front.ServeHTTP(w, r)
		assert.Equal(t, tc.status, w.code, "%v", tc.header)
		assert.Contains(t, w.body.String(), tc.body)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("origin")))
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}, code: http.StatusOK} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

// An Origin longer than 128 bytes is quoted cut in the refusal; one of
// 128 bytes whole.
func TestHTTPRefusalQuotesOriginUpTo128(t *testing.T) {
	e := newEnv(t, "")
	at := "https://" + strings.Repeat("o", 120)
	over := at + "X"
	_, a, _ := post(t, e.http.URL, listCall, map[string][]string{"Origin": {at}})
	assert.Contains(t, a.Error.Data.Details, `"`+at+`"`)
	_, a, _ = post(t, e.http.URL, listCall, map[string][]string{"Origin": {over}})
	assert.Contains(t, a.Error.Data.Details, `"`+at+`…"`)
	assert.NotContains(t, a.Error.Data.Details, "X")
}

// A cap of 0 leaves the listener as it is.
func TestLimitListenerZeroIsNoCap(t *testing.T) {
	e := newEnv(t, "")
	ln := e.http.Listener
	assert.Same(t, ln, LimitListener(ln, 0, e.metrics))
	assert.Same(t, ln, LimitListener(ln, -1, e.metrics))
}
