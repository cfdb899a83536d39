package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeListener hands the proxy in-memory connections, so that a test in
// a synctest bubble owns every timer and goroutine involved.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

func (l *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	l.conns <- s
	return c
}

// deadlineResolver records how far off the deadline of its context was.
type deadlineResolver struct{ left time.Duration }

func (d *deadlineResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	dl, _ := ctx.Deadline()
	d.left = time.Until(dl)
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// serveBubble runs a Run of a zero Config (all defaults but the resolver
// and dial) on a pipe listener and returns it and a stop.
func serveBubble(t *testing.T, res Resolver, dial DialFunc) (*pipeListener, func()) {
	p, err := New(Config{Resolver: res, Dial: dial})
	require.NoError(t, err)
	l := newPipeListener()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.ForRun(RunInfo{}, allowAll()).Serve(l, nil)
	}()
	return l, func() { _ = l.Close(); <-done }
}

// The documented defaults, in virtual time: resolving and connecting get
// 10 s, reading the request 30 s.
func TestDefaultTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := &deadlineResolver{}
		var dialLeft time.Duration
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			dl, _ := ctx.Deadline()
			dialLeft = time.Until(dl)
			c, s := net.Pipe()
			_ = s.Close()
			return c, nil
		}
		l, stop := serveBubble(t, res, dial)
		defer stop()

		c := l.dial()
		_, err := io.WriteString(c, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		_ = c.Close()
		assert.Equal(t, 10*time.Second, res.left)
		assert.Equal(t, 10*time.Second, dialLeft)

		// A run that opens a connection and says nothing is answered
		// exactly 30 s later.
		began := time.Now()
		idle := l.dial()
		resp, err = http.ReadResponse(bufio.NewReader(idle), nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, "egress denied: ? (bad_request: unreadable proxy request)\n", string(body))
		assert.Equal(t, 30*time.Second, time.Since(began))
		_ = idle.Close()
	})
}

// By default a run holds 16 connections; the 17th is told why it is
// refused.
func TestDefaultConnectionLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		far := make(chan net.Conn, 16) // the destinations' ends
		dial := func(context.Context, string, string) (net.Conn, error) {
			c, s := net.Pipe()
			far <- s
			return c, nil
		}
		l, stop := serveBubble(t, &deadlineResolver{}, dial)
		defer stop()
		tunnel := func() (net.Conn, *http.Response) {
			c := l.dial()
			_, err := io.WriteString(c, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			require.NoError(t, err)
			return c, resp
		}
		var held []net.Conn
		for range 16 {
			c, resp := tunnel()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			held = append(held, c)
		}
		c, resp := tunnel()
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, "egress denied: a.example:443 (connection_limit: more than 16 concurrent connections)\n", string(body))
		_ = c.Close()
		for _, h := range held {
			_ = h.Close()
		}
		close(far)
		for s := range far {
			_ = s.Close()
		}
	})
}
