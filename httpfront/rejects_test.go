package httpfront

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
)

// capped serves the env's front door behind LimitListener(limit).
func (e *env) capped(limit int) *httptest.Server {
	e.t.Helper()
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	srv := httptest.NewUnstartedServer(front)
	srv.Listener = LimitListener(srv.Listener, limit, e.metrics)
	srv.Start()
	e.t.Cleanup(srv.Close)
	return srv
}

// readRefusal reads what the server answers a connection past the cap:
// the status of its 503, or 0 when it closed the connection unanswered.
func readRefusal(t *testing.T, c net.Conn) int {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// At most 64 refused connections are answered at once: while 64 are
// being answered (their clients still connected), the 65th is closed
// without an answer; once they are gone, 64 are answered again, not one
// fewer. Every refusal is counted.
func TestHTTPRejectingAtMost64(t *testing.T) {
	e := newEnv(t, "")
	srv := e.capped(1)
	held := rawRequest(t, hostOf(srv), "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+fmt.Sprint(len(listCall))+"\r\n\r\n"+listCall)
	resp, err := http.ReadResponse(bufio.NewReader(held), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the one connection the cap allows")

	for round := 1; round <= 2; round++ {
		counted := testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("connection_limit"))
		refused := make([]net.Conn, 64)
		for i := range refused {
			refused[i] = rawRequest(t, hostOf(srv), "")
			require.Equal(t, http.StatusServiceUnavailable, readRefusal(t, refused[i]), "round %d: refusal %d is answered", round, i+1)
		}
		extra := rawRequest(t, hostOf(srv), "")
		assert.Equal(t, 0, readRefusal(t, extra), "round %d: the 65th is closed unanswered", round)
		assert.Equal(t, counted+65, testutil.ToFloat64(e.metrics.HTTPRefused.WithLabelValues("connection_limit")))

		for _, c := range refused {
			require.NoError(t, c.Close())
		}
		// The rejecting goroutines notice the closes on their own time:
		// wait until a refusal is answered again.
		answered := false
		for range 500 {
			c := rawRequest(t, hostOf(srv), "")
			got := readRefusal(t, c)
			_ = c.Close()
			if got == http.StatusServiceUnavailable {
				answered = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		require.True(t, answered, "round %d: refusals are answered again", round)
		// That probe is being answered still, or done: wait until every
		// rejecting goroutine is gone before the next round (a fixed sleep
		// would lose that race on a loaded machine).
		ll := srv.Listener.(*limitListener)
		require.Eventually(t, func() bool { return ll.refused.Load() == 0 }, 10*time.Second, 5*time.Millisecond,
			"round %d: the rejecting goroutines end", round)
	}
}
