package session

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Research item 2: every write has a deadline, even while the queue stays
// far under its byte bound. A peer that stops reading is cut off as a
// slow reader once its write times out, and nothing else closes it.
func TestWriteDeadlineCutsIdleReader(t *testing.T) {
	f := newFixture(t, "pipe", func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	p := f.dial()
	p.initialize()
	c := f.onlyConn()
	// net.Pipe holds nothing: the answer's write blocks until read.
	p.request("Big", `{"n":1000}`)
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second): // safety net only
		t.Fatal("a peer that stopped reading was never cut off")
	}
	assert.Equal(t, ReasonSlowReader, c.Reason(), "closed for another reason: %v", c.Err())
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "slow_reader")) == 1
	}, 5*time.Second, time.Millisecond)
}

// A frame left unfinished past the frame timeout closes the connection
// under its own reason, not as a parse error, though the code on the
// wire is the parse error's.
func TestFrameTimeoutReason(t *testing.T) {
	f := newFixture(t, "pipe", func(c *Config) { c.FrameTimeout = 100 * time.Millisecond })
	p := f.dial()
	p.writeRaw(`0000003f:{"jsonrpc":"2.0"`)
	p.expectAbort(transport.CodeParseError, transport.StringParseError)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "frame_timeout")) == 1
	}, 5*time.Second, time.Millisecond)
}

// bubbleConn returns the one connection of a server inside a synctest
// bubble, once it is registered.
func bubbleConn(t *testing.T, srv *Server) *Conn {
	t.Helper()
	synctest.Wait()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.conns, 1)
	for c := range srv.conns {
		return c
	}
	return nil
}

// The write deadline is renewed only when less than half of the write
// timeout is left. An answer written W/2 after the first (or sooner)
// still runs under the first deadline, so a peer that stops reading then
// is cut off W after the first write; one written a nanosecond later gets
// a fresh deadline of its own. Virtual time (synctest) makes the instants
// exact.
func TestWriteDeadlineRenewedAtHalf(t *testing.T) {
	const w = 10 * time.Second
	for _, tc := range []struct {
		name  string
		after time.Duration
		cut   time.Duration
	}{
		{"one below half", w/2 - 1, w},
		{"at half", w / 2, w},
		{"one above half", w/2 + 1, w/2 + 1 + w},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.WriteTimeout = 0, w })
				c := bubbleConn(t, srv)
				start := time.Now()
				p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`)
				require.Equal(t, "k-1", *p.recv().ID)
				time.Sleep(tc.after)
				p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-2"}`)
				<-c.Done() // the peer reads no more
				assert.Equal(t, tc.cut, time.Since(start))
				assert.Equal(t, ReasonSlowReader, c.Reason())
				_ = srv.Close()
			})
		})
	}
}

// An aborting connection's _CloseReason gets at most finalWriteTimeout
// (2 s), however long the write timeout: a peer that sends garbage and
// reads nothing is gone 2 s later.
func TestFinalFrameDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.WriteTimeout = 0, time.Minute })
		c := bubbleConn(t, srv)
		start := time.Now()
		p.writeRaw("0000000g:{}\n")
		<-c.Done()
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, ReasonParseError, c.Reason())
		_ = srv.Close()
	})
}
