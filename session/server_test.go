package session

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
)

// failingListener fails its first accepts the way a process out of file
// descriptors does, recording when each Accept was called, then reports
// itself closed.
type failingListener struct {
	net.Listener
	failures int
	calls    []time.Time
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls = append(l.calls, time.Now())
	if len(l.calls) <= l.failures {
		return nil, errors.New("accept: too many open files")
	}
	return nil, net.ErrClosed
}

// A failing Accept is retried after 5 ms, then twice as long each time up
// to one second.
func TestAcceptBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := NewServer(Config{Metrics: metrics.New("test")}, nil)
		require.NoError(t, err)
		l := &failingListener{failures: 10}
		require.ErrorIs(t, srv.Serve(l, "tcp"), ErrServerClosed)
		var gaps []time.Duration
		for i := 1; i < len(l.calls); i++ {
			gaps = append(gaps, l.calls[i].Sub(l.calls[i-1]))
		}
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, gaps)
	})
}

// Once the server is shutting down it takes no more: Serve returns
// ErrServerClosed and closes the listener, ServeConn closes the connection.
func TestServeAfterShutdown(t *testing.T) {
	srv, err := NewServer(Config{Metrics: metrics.New("test")}, nil)
	require.NoError(t, err)
	require.NoError(t, srv.Close())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.ErrorIs(t, srv.Serve(ln, "tcp"), ErrServerClosed)
	_, err = ln.Accept()
	assert.ErrorIs(t, err, net.ErrClosed, "the listener was left open")

	a, b := net.Pipe()
	defer a.Close()
	srv.ServeConn(b, "pipe")
	_, err = a.Read(make([]byte, 1))
	assert.Error(t, err, "the connection was left open")
	assert.Zero(t, srv.Connections())
}

// Connections counts the open connections.
func TestConnectionsCounted(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	assert.Zero(t, f.srv.Connections())
	p1, p2 := f.dial(), f.dial()
	p1.initialize()
	p2.initialize()
	assert.Equal(t, 2, f.srv.Connections())
	require.NoError(t, p1.nc.Close())
	require.Eventually(t, func() bool { return f.srv.Connections() == 1 }, 30*time.Second, time.Millisecond)
}

// A TLS connection over the connection limit whose handshake fails gets
// nothing written and is closed; it is still counted as rejected.
func TestRejectFailedHandshake(t *testing.T) {
	f := newFixture(t, "tls", func(c *Config) { c.MaxConnections = 1 })
	f.dial().initialize()
	nc, err := net.Dial("tcp", f.ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write([]byte("not a TLS client hello\r\n\r\n"))
	require.NoError(t, err)
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 1024)
	for {
		n, err := nc.Read(buf)
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection still open")
			break
		}
		// A TLS alert may come back; a _CloseReason may not.
		require.NotContains(t, string(buf[:n]), "_CloseReason")
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ConnectionsRejected.WithLabelValues("tls", "overloaded")))
}
