package session

import (
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// gatedConn delivers every write at once but, while held, keeps the
// writer waiting before the write returns: the state of a write whose bytes
// the peer has read while the gateway has not yet noticed.
type gatedConn struct {
	net.Conn
	mu   sync.Mutex
	gate chan struct{} // nil: writes return at once
}

func (g *gatedConn) Write(b []byte) (int, error) {
	n, err := g.Conn.Write(b)
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return n, err
}

func (g *gatedConn) hold() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedConn) open() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

// gatedServer serves one net.Pipe connection through a gatedConn, inside
// the caller's synctest bubble.
func gatedServer(t *testing.T, mutate func(*Config)) (*Server, *testHandler, *gatedConn, *peer, *metrics.Metrics) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InitMethod = "Initialize"
	cfg.InitTimeout = 0
	cfg.KeepaliveInterval = time.Hour // no probe frames in the counts
	cfg.Metrics = metrics.New("test")
	if mutate != nil {
		mutate(&cfg)
	}
	h := newTestHandler()
	srv, err := NewServer(cfg, h)
	require.NoError(t, err)
	a, b := net.Pipe()
	g := &gatedConn{Conn: b}
	srv.ServeConn(g, "pipe")
	return srv, h, g, &peer{t: t, nc: a, fr: transport.NewReader(a, 1<<20), bubbled: true}, cfg.Metrics
}

// A peer exactly at the queue bound that has read everything it was sent
// is not cut off: the bytes it read no longer count, even while the write
// that carried them has not returned yet. Here the one answer queued fills
// the bound exactly; the peer reads it and sends a _Keepalive, whose answer
// must be delivered rather than met with SLOW_READER.
func TestBoundReleasedOnceRead(t *testing.T) {
	const bound = 16 << 10 // the smallest message size; the queue holds one
	synctest.Test(t, func(t *testing.T) {
		srv, h, g, p, mt := gatedServer(t, func(c *Config) {
			c.MaxMessageSize, c.MaxQueuedBytes = bound, bound
		})
		defer func() { _ = srv.Close() }()
		p.initialize()

		n := bound - resultFrameLen("h-1", 0)
		p.send(`{"jsonrpc":"2.0","method":"Hold","params":{"n":` + itoa(n) + `},"id":"h-1"}`)
		<-h.started
		synctest.Wait() // the read loop waits for the next frame
		g.hold()
		h.release <- struct{}{}
		m := p.recv()
		require.Equal(t, "h-1", *m.ID)
		require.Len(t, m.Result, bound-resultFrameLen("h-1", 0)+len(`{"data":""}`))

		p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`)
		synctest.Wait()
		g.open()
		m = p.recv()
		require.Empty(t, m.Method, "got %s instead of the keepalive answer", m.Method)
		assert.Equal(t, "k-1", *m.ID)
		assert.Nil(t, m.Error)
		assert.Nil(t, p.call("_Keepalive", `{}`).Error, "the connection lives on")
		assert.Zero(t, testutil.ToFloat64(mt.Aborts.WithLabelValues(transport.StringSlowReader)))
	})
}

// skillgate_frames_sent_total counts frames, also when small frames queued
// behind a busy writer share one buffer and leave in one write.
func TestFramesSentCountsMergedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _, g, p, mt := gatedServer(t, nil)
		defer func() { _ = srv.Close() }()

		g.hold()
		p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-0"}`)
		require.Equal(t, "k-0", *p.recv().ID)
		// The writer now waits for its write to return; three more
		// answers queue behind it.
		p.writeRaw(frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`) +
			frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-2"}`) +
			frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-3"}`))
		synctest.Wait()
		g.open()
		for _, id := range []string{"k-1", "k-2", "k-3"} {
			assert.Equal(t, id, *p.recv().ID)
		}
		synctest.Wait()
		assert.Equal(t, 4.0, testutil.ToFloat64(mt.FramesSent))
	})
}

// While a write is under way, an answer waits for it only when it would
// fit once that write returns: an answer of exactly MaxQueuedBytes, queued
// behind an unread keepalive answer, waits and is delivered when the peer
// reads; one byte larger can never fit and aborts the connection with
// SLOW_READER at once, before the peer reads anything.
func TestBoundBehindWriteUnderWay(t *testing.T) {
	const bound = 16 << 10
	for _, tc := range []struct {
		name string
		over int
	}{{"at", 0}, {"one above", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, h, _, p, mt := gatedServer(t, func(c *Config) {
					c.MaxMessageSize, c.MaxQueuedBytes = bound, bound
				})
				defer func() { _ = srv.Close() }()
				p.initialize()
				n := bound + tc.over - resultFrameLen("h-1", 0)
				p.send(`{"jsonrpc":"2.0","method":"Hold","params":{"n":` + itoa(n) + `},"id":"h-1"}`)
				<-h.started
				// The peer does not read this answer yet: its write stays
				// under way.
				p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k-1"}`)
				synctest.Wait()
				h.release <- struct{}{}
				synctest.Wait()
				aborts := testutil.ToFloat64(mt.Aborts.WithLabelValues(transport.StringSlowReader))
				require.Equal(t, "k-1", *p.recv().ID)
				if tc.over > 0 {
					assert.Equal(t, 1.0, aborts)
					p.expectAbort(1, "SLOW_READER")
					return
				}
				assert.Zero(t, aborts)
				assert.Equal(t, "h-1", *p.recv().ID)
				assert.Nil(t, p.call("_Keepalive", `{}`).Error, "the connection lives on")
			})
		})
	}
}

// The frame and byte counters count exactly what crossed the wire, each
// way. Requests go one at a time: small answers queued together share a
// buffer and are counted as one frame sent.
func TestWireCounters(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	p.writeRaw(frame(`{"jsonrpc":"2.0","method":"_Info","params":{}}`) +
		frame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"c-1"}`))
	sent, got := 2*transport.FrameOverhead+len(`{"jsonrpc":"2.0","method":"_Info","params":{}}`+
		`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"c-1"}`), 0
	for _, id := range []string{"c-1", "c-22"} {
		if id != "c-1" {
			body := `{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`
			p.send(body)
			sent += len(body) + transport.FrameOverhead
		}
		m := p.recv()
		require.Equal(t, id, *m.ID)
		got += len(transport.AppendResult(nil, []byte(`"`+id+`"`), transport.EmptyObject)) + transport.FrameOverhead
	}
	mt := f.metrics
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(mt.FramesReceived) == 3 && testutil.ToFloat64(mt.FramesSent) == 2
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, float64(sent), testutil.ToFloat64(mt.BytesReceived))
	require.Eventually(t, func() bool { return testutil.ToFloat64(mt.BytesSent) == float64(got) }, 5*time.Second, time.Millisecond)
}

// Frames are counted as received only when a whole frame was read: the
// end of the connection adds none.
func TestFramesReceivedUntilClose(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	c := f.onlyConn()
	require.Nil(t, p.call("_Keepalive", `{}`).Error)
	require.NoError(t, p.nc.Close())
	<-c.Done()
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.FramesReceived))
}
