package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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

// createBlobHTTP stores a text blob of n bytes and returns its id.
func createBlobHTTP(t *testing.T, url string, n int) string {
	t.Helper()
	_, a, out := post(t, url, `{"jsonrpc":"2.0","method":"create_blob","params":{"content":"`+strings.Repeat("b", n)+`"},"id":1}`, nil)
	require.Equal(t, "ok", a.code(), "%s", out)
	var res struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal(a.Result, &res))
	return res.BlobID
}

func readBlobBatch(id string, n int, maxBytes int) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":%q,"max_bytes":%d},"id":%d}`, id, maxBytes, i)
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// Issue 9 item 2: a batch of many read_blob calls of a large blob is
// answered within the message size limit as a whole; the calls past the
// limit get RESPONSE_TOO_LARGE, in order, with their ids.
func TestHTTPBatchAnswerFitsMessageSize(t *testing.T) {
	e := newEnv(t, "")
	id := createBlobHTTP(t, e.http.URL, 60<<10)
	status, out := postRPC(t, e.http.URL, readBlobBatch(id, 40, 40<<10))
	require.Equal(t, http.StatusOK, status)
	assert.LessOrEqual(t, len(out), testMaxMessage, "the whole batch answer fits the limit")
	var answers []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &answers), "%s", out)
	require.Len(t, answers, 40)
	assert.Equal(t, "ok", answers[0].code())
	for i, a := range answers {
		assert.Equal(t, fmt.Sprint(i), string(a.ID))
		if i > 0 {
			assert.Equal(t, transport.StringResponseTooLarge, a.code(), "call %d", i)
			assert.Equal(t, 1, a.Error.Code, "an application error")
		}
	}
}

// A batch whose error answers alone cannot fit is refused as a whole,
// before anything runs.
func TestHTTPBatchRefusedWhenErrorsCannotFit(t *testing.T) {
	e := newEnv(t, "")
	long := strings.Repeat("i", 500)
	calls := make([]string, maxBatch)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"list_skills","params":{},"id":"%s%d"}`, long, i)
	}
	status, a, out := post(t, e.http.URL, "["+strings.Join(calls, ",")+"]", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, transport.StringResponseTooLarge, a.code(), "%.300s", out)
	assert.Equal(t, "null", string(a.ID))
	assert.Zero(t, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "list_skills", "ok")))
}

// Issue 9 item 3: answers are held from the gateway-wide budget. A full
// budget refuses new work with OVERLOADED and a retry hint (HTTP 200, as
// for every protocol error) without running it; an answer that does not
// fit is replaced; every byte is given back once written.
func TestHTTPAnswerBudget(t *testing.T) {
	e := newEnv(t, "")
	id := createBlobHTTP(t, e.http.URL, 30<<10)
	budget := session.NewBudget(8 << 10)
	_, srv := e.serveHTTP(Options{Budget: budget})

	budget.Reserve(8 << 10)
	status, a, out := post(t, srv.URL, listCall, nil)
	assert.Equal(t, http.StatusOK, status)
	require.Equal(t, transport.StringOverloaded, a.code(), "%s", out)
	require.NotNil(t, a.Error.Data.Retry)
	assert.Contains(t, string(out), `"retry":{"suggested_delay_ms":200,"max_attempts":10}`, "the framed front's hint for a full budget")
	assert.Zero(t, testutil.ToFloat64(e.metrics.Requests.WithLabelValues("http", "list_skills", "ok")), "nothing ran")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.BudgetRefusals.WithLabelValues(metrics.FrontHTTP)))
	budget.Release(8 << 10)

	status, out = postRPC(t, srv.URL, `[`+listCall+`,`+strings.TrimSuffix(readBlobBatch(id, 1, 20<<10)[1:], "]")+`]`)
	assert.Equal(t, http.StatusOK, status)
	var answers []rpcAnswer
	require.NoError(t, json.Unmarshal(out, &answers), "%s", out)
	require.Len(t, answers, 2)
	assert.Equal(t, "ok", answers[0].code())
	assert.Equal(t, transport.StringOverloaded, answers[1].code(), "20 KB do not fit a budget of 8 KB")
	require.Eventually(t, func() bool { return budget.Used() == 0 }, 10*time.Second, time.Millisecond,
		"the answer's bytes are released once written")
}

// rawRequest opens a TCP connection to srv and writes head.
func rawRequest(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)), "a safety net only")
	_, err = c.Write([]byte(head))
	require.NoError(t, err)
	return c
}

func hostOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// Issue 9 item 4: a body that dribbles in is cut when the whole of it has
// not arrived within the body timeout, however steadily bytes come.
func TestHTTPSlowBodyIsCut(t *testing.T) {
	e := newEnv(t, "")
	_, srv := e.serveHTTP(Options{BodyTimeout: 300 * time.Millisecond})
	c := rawRequest(t, hostOf(srv), "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{")
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range 3000 { // a minute at this pace: far beyond the timeout
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	assert.Equal(t, "JSONRPC_PARSE_ERROR", a.code())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("body_timeout")))
}

// A body that arrives in time is served, and the deadline set for it does
// not cut the calls that run afterwards.
func TestHTTPBodyTimeoutSparesServedCalls(t *testing.T) {
	e := newEnv(t, "")
	release := make(chan struct{})
	e.d.Register("wait", nil, func(ctx context.Context, _ *dispatch.Call) (any, error) {
		select {
		case <-release:
			return map[string]any{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	_, srv := e.serveHTTP(Options{BodyTimeout: 50 * time.Millisecond})
	go func() {
		time.Sleep(300 * time.Millisecond) // past the body timeout
		close(release)
	}()
	_, a, out := post(t, srv.URL, `{"jsonrpc":"2.0","method":"wait","params":{},"id":1}`, nil)
	assert.Equal(t, "ok", a.code(), "%s", out)
}

// A declared Content-Length over the limit gets 413 at once: a client
// that asked "Expect: 100-continue" is never told to send the body.
func TestHTTPExpectContinueOverLimit(t *testing.T) {
	e := newEnv(t, "")
	c := rawRequest(t, hostOf(e.http), fmt.Sprintf("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n", 100*testMaxMessage))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.True(t, resp.Close, "the connection is not reused")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("too_large")))
}

// HTTP connections count against a cap of their own: one past it gets 503
// OVERLOADED without reaching the server, and a freed slot serves again.
func TestHTTPConnectionCap(t *testing.T) {
	e := newEnv(t, "")
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	srv := httptest.NewUnstartedServer(front)
	srv.Listener = LimitListener(srv.Listener, 2, e.metrics)
	srv.Start()
	defer srv.Close()
	get := "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
		fmt.Sprint(len(listCall)) + "\r\n\r\n" + listCall
	roundTrip := func(c net.Conn, br *bufio.Reader) int {
		_, err := c.Write([]byte(get))
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	held := make([]net.Conn, 2)
	for i := range held {
		held[i] = rawRequest(t, hostOf(srv), "")
		assert.Equal(t, http.StatusOK, roundTrip(held[i], bufio.NewReader(held[i])))
	}
	extra := rawRequest(t, hostOf(srv), "")
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	require.NoError(t, err)
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, transport.StringOverloaded, a.code())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("connection_limit")))

	require.NoError(t, held[0].Close())
	served := false
	for range 500 { // the server notices the close on its own time
		c := rawRequest(t, hostOf(srv), "")
		if roundTrip(c, bufio.NewReader(c)) == http.StatusOK {
			served = true
			break
		}
		_ = c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	assert.True(t, served, "a freed slot serves a new connection")
}
