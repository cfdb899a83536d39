package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingListener counts the bytes the proxy reads from its
// connections: what it took from the run, whatever it kept of it.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, read: &l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func countingLoopback(t *testing.T) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return &countingListener{Listener: l}
}

// sendEndless writes head, then up to total bytes of filler, to c in
// the background until the proxy stops taking them; the returned
// channel closes when it has stopped.
func sendEndless(c net.Conn, head string, total int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	return done
}

// A run that sends an endless request header gets a 431 once the header
// passes the limit, and the proxy has read no more than the limit of the
// 32 MiB offered: what it holds of one request stays bounded.
func TestEndlessHeaderIsCutAtTheLimit(t *testing.T) {
	l := countingLoopback(t)
	// The request timeout bounds the test when the limit is missing.
	h := startOn(t, Config{RequestTimeout: 5 * time.Second, Resolver: names{"a.example": {"93.184.216.34"}}},
		allowAll(), &upstream{}, l)
	c, err := net.Dial("tcp", h.addr)
	require.NoError(t, err)
	defer c.Close()
	sent := sendEndless(c, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\nX-Endless: ", 32<<20)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	assert.Equal(t, "egress denied: ? (header_too_large: the request line and headers pass 65536 bytes)\n", string(body))
	_ = c.Close()
	<-sent
	h.stop()
	assert.LessOrEqual(t, l.read.Load(), int64(64<<10), "the proxy read no more than the header limit")
	assert.Empty(t, h.up.dialled())
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.EgressConnections.WithLabelValues("header_too_large")))
	assert.Equal(t, []string{"egress denied: ? (header_too_large: the request line and headers pass 65536 bytes)\n"}, h.notes)
}

// A header of exactly the limit is read; one byte more is not.
func TestHeaderLimitBoundary(t *testing.T) {
	const limit = 200
	h := start(t, Config{MaxHeaderBytes: limit, Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), &upstream{})
	head := "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\nX-Pad: "
	pad := strings.Repeat("p", limit-len(head)-len("\r\n\r\n"))
	for _, tc := range []struct {
		pad  string
		want int
	}{{pad, http.StatusOK}, {pad + "p", http.StatusRequestHeaderFieldsTooLarge}} {
		c, err := net.Dial("tcp", h.addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, head+tc.pad+"\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		assert.Equal(t, tc.want, resp.StatusCode, "%d header bytes", len(head+tc.pad)+4)
		_ = c.Close()
	}
}

// The bytes of request headers count towards the run's byte cap: a
// cap that one CONNECT request fits in leaves no room for a second.
func TestHeaderBytesCountTowardsTheCap(t *testing.T) {
	n := connectLen("a.example:443")
	h := start(t, Config{MaxBytes: int64(2*n - 1), Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(),
		&upstream{serve: func(s net.Conn) { _, _ = io.Copy(io.Discard, s) }})
	c, _, status := h.connect(t, "a.example:443")
	require.Equal(t, "200 Connection established", status)
	defer c.Close()

	c2, err := net.Dial("tcp", h.addr)
	require.NoError(t, err)
	defer c2.Close()
	_, err = io.WriteString(c2, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n")
	require.NoError(t, err)
	_, err = http.ReadResponse(bufio.NewReader(c2), &http.Request{Method: http.MethodConnect})
	assert.Error(t, err, "the second request passes the cap: its connection is closed unanswered")
	h.stop()
	assert.Len(t, h.up.dialled(), 1)
}

// A run may have MaxHeaderReaders requests read at once: with two
// readers held by requests that do not end, a third connection is not
// read at all until one of them is done, and is then served.
func TestHeaderReadersPerRunAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		far := make(chan net.Conn, 4) // the destinations' ends
		p, err := New(Config{MaxHeaderReaders: 2, Resolver: fixedResolver{},
			Dial: func(context.Context, string, string) (net.Conn, error) {
				c, s := net.Pipe()
				far <- s
				return c, nil
			}})
		require.NoError(t, err)
		l := newPipeListener()
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.ForRun(RunInfo{}, allowAll()).Serve(l, nil)
		}()

		var slow [2]net.Conn
		for i := range slow {
			slow[i] = l.dial()
			_, err := io.WriteString(slow[i], "CONNECT a.example:443 HTTP/1.1\r\nX-Slow: ")
			require.NoError(t, err)
		}
		third := l.dial()
		var read atomic.Bool // a pipe's write returns once the far end read it all
		go func() {
			_, err := io.WriteString(third, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n")
			read.Store(err == nil)
		}()
		synctest.Wait()
		assert.False(t, read.Load(), "a third request is not read while two are")

		_, err = io.WriteString(slow[0], "x\r\n\r\n")
		require.NoError(t, err)
		for _, c := range []net.Conn{slow[0], third} {
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}
		assert.True(t, read.Load())

		for _, c := range []net.Conn{slow[0], slow[1], third} {
			_ = c.Close()
		}
		_ = l.Close()
		<-done
		close(far)
		for s := range far {
			_ = s.Close()
		}
	})
}
