package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// Each way an allowed origin or host can be malformed is refused on its
// own; http and https origins, with or without a trailing slash, pass.
func TestHTTPOptionsValidateEachRule(t *testing.T) {
	for _, good := range []string{"http://a.example", "https://a.example:8443", "https://a.example/"} {
		assert.NoError(t, Options{AllowedOrigins: []string{good}}.Validate(), good)
	}
	for _, bad := range []string{"https://a.example?x=1", "https://user@a.example", "https://a.example/app/", "https://a b", "ws://a.example"} {
		err := Options{AllowedOrigins: []string{bad}}.Validate()
		assert.ErrorContains(t, err, "want scheme://host[:port]", bad)
	}
	assert.NoError(t, Options{AllowedHosts: []string{"gw.example", "localhost"}}.Validate())
	for _, bad := range []string{"gw/x", "gw:1", "u@gw", "g w", ""} {
		err := Options{AllowedHosts: []string{bad}}.Validate()
		assert.ErrorContains(t, err, "want a host name without port", bad)
	}
	err := Options{AllowedOrigins: []string{"a", "b"}, AllowedHosts: []string{"c:1"}}.Validate()
	assert.ErrorContains(t, err, `allowed origin "a"`)
	assert.ErrorContains(t, err, `allowed origin "b"`)
	assert.ErrorContains(t, err, `allowed host "c:1"`, "every error is reported")
}

// A form post is refused even with a credential: one Authorization
// header does not make text/plain acceptable.
func TestHTTPFormPostWithCredentialRefused(t *testing.T) {
	e := newEnv(t, "")
	status, a, out := post(t, e.http.URL, listCall, map[string][]string{"Content-Type": {"text/plain"}, "Authorization": {"Bearer x"}})
	assert.Equal(t, http.StatusForbidden, status, "%s", out)
	assert.Equal(t, dispatch.StringPermissionDenied, a.code())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("content_type")))
}

// An HTTP/1.0 request without Host cannot come from a browser: it passes
// the loopback host check; a loopback name with a trailing dot is the
// same name.
func TestHTTPLoopbackHostEdges(t *testing.T) {
	e := newEnv(t, "")
	status, a := rawAnswer(t, hostOf(e.http), "POST /rpc HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(listCall))+"\r\n\r\n"+listCall)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", a.code())

	status, a, out := post(t, e.http.URL, listCall, map[string][]string{"Host": {"LOCALHOST.:8080"}})
	assert.Equal(t, http.StatusOK, status, "%s", out)
	assert.Equal(t, "ok", a.code())
}

// A body that cannot be read (a malformed chunked encoding) is a parse
// error naming the reason, 400.
func TestHTTPUnreadableBody(t *testing.T) {
	e := newEnv(t, "")
	status, a := rawAnswer(t, hostOf(e.http), "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "JSONRPC_PARSE_ERROR", a.code())
	assert.Contains(t, a.Error.Data.Details, "chunk")
}

// The answer budget refuses new work once it holds exactly its limit,
// without running it; one byte below the limit the call runs (and its
// answer, which cannot fit, is replaced). Each refusal is counted once.
func TestHTTPBudgetFullBoundary(t *testing.T) {
	e := newEnv(t, "")
	var ran atomic.Int64
	e.d.Register("count", nil, func(context.Context, *dispatch.Call) (any, error) {
		ran.Add(1)
		return map[string]any{"n": 1}, nil
	})
	budget := session.NewBudget(1 << 10)
	_, srv := e.serveHTTP(Options{Budget: budget})
	const call = `{"jsonrpc":"2.0","method":"count","params":{},"id":1}`
	refusals := func() float64 { return testutil.ToFloat64(e.metrics.BudgetRefusals.WithLabelValues(metrics.FrontHTTP)) }

	budget.Reserve(1 << 10)
	_, a, out := post(t, srv.URL, call, nil)
	assert.Equal(t, transport.StringOverloaded, a.code(), "%s", out)
	assert.Zero(t, ran.Load(), "exactly at the limit: refused before running")
	assert.Equal(t, 1.0, refusals())

	budget.Release(1)
	_, a, out = post(t, srv.URL, call, nil)
	assert.Equal(t, transport.StringOverloaded, a.code(), "%s", out)
	assert.Equal(t, int64(1), ran.Load(), "one byte below the limit: it runs")
	assert.Equal(t, 2.0, refusals(), "its answer did not fit: counted once")
	budget.Release(1<<10 - 1)
	require.Eventually(t, func() bool { return budget.Used() == 0 }, 10*time.Second, time.Millisecond)
}

// Once the front door has expired its answers close their connection.
func TestHTTPExpiredClosesConnections(t *testing.T) {
	e := newEnv(t, "")
	front, srv := e.serveHTTP(Options{})
	resp, err := http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(listCall))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	assert.False(t, resp.Close, "kept alive before")

	front.Expire()
	resp, err = http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(listCall))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	assert.True(t, resp.Close, "Connection: close once expired")
	resp, err = http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"list_skills","params":{}}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.True(t, resp.Close, "a notification's empty answer too")
}

// A notification still running when the front door expires gets no
// answer, as it would not have: the batch holds the answer of its call
// only.
func TestHTTPExpiredNotificationNotAnswered(t *testing.T) {
	e := newEnv(t, "")
	entered, release := e.registerStuck(2)
	defer release()
	front, srv := e.serveHTTP(Options{})
	got := make(chan []byte, 1)
	go func() {
		_, out := postRPC(t, srv.URL, `[{"jsonrpc":"2.0","method":"stuck","params":{}},{"jsonrpc":"2.0","method":"stuck","params":{},"id":9}]`)
		got <- out
	}()
	<-entered
	<-entered
	front.Expire()
	out := <-got
	var answers []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &answers), "%s", out)
	require.Len(t, answers, 1)
	assert.Equal(t, "9", string(answers[0].ID))
	assert.Equal(t, transport.StringServerShutdown, answers[0].code())
}

// A request that does not end even when the front door expires (a
// handler mounted with Handle that ignores everything) gets the grace,
// then its connection is closed: Shutdown returns within the drain
// deadline plus the grace, reporting the drain incomplete.
func TestHTTPShutdownGraceEnds(t *testing.T) {
	e := newEnv(t, "")
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	entered := make(chan struct{})
	release := make(chan struct{})
	front.Handle("/hang", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	c := rawRequest(t, ln.Addr().String(), "GET /hang HTTP/1.1\r\nHost: localhost\r\n\r\n")
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan bool, 1)
	go func() { done <- Shutdown(ctx, srv, front, 50*time.Millisecond) }()
	select {
	case ok := <-done:
		assert.False(t, ok)
	case <-time.After(30 * time.Second): // a safety net, not a measure
		close(release)
		t.Fatal("Shutdown waits for the handler, past the grace")
	}
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err, "the connection is closed")
	close(release)
}

// MaxResponseBytes 0 sets no limit: an answer, and a batch's, of any
// size is served as it is.
func TestHTTPNoResponseLimit(t *testing.T) {
	e := newEnv(t, "")
	id := createBlobHTTP(t, e.http.URL, 30<<10)
	srv := httptest.NewServer(New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage}))
	t.Cleanup(srv.Close)
	status, out := postRPC(t, srv.URL, readBlobBatch(id, 3, 30<<10))
	assert.Equal(t, http.StatusOK, status)
	var answers []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &answers), "%s", out)
	require.Len(t, answers, 3)
	for _, a := range answers {
		assert.Equal(t, "ok", a.code())
	}
	assert.Greater(t, len(out), 90<<10)
	_, a, out := post(t, srv.URL, strings.TrimSuffix(strings.TrimPrefix(readBlobBatch(id, 1, 30<<10), "["), "]"), nil)
	assert.Equal(t, "ok", a.code(), "%s", out[:min(len(out), 200)])
}

// rawAnswer sends a request as written and decodes the JSON-RPC answer.
func rawAnswer(t *testing.T, addr, request string) (int, rpcAnswer) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(rawRequest(t, addr, request)), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	return resp.StatusCode, a
}
