package session

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// pipeServer starts a server on one end of a net.Pipe inside a synctest
// bubble, where time advances only when every goroutine is blocked.
func pipeServer(t *testing.T, mutate func(*Config)) (*Server, *peer) {
	cfg := DefaultConfig()
	cfg.InitMethod = "Initialize"
	cfg.Metrics = metrics.New("test")
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := NewServer(cfg, newTestHandler())
	require.NoError(t, err)
	a, b := net.Pipe()
	srv.ServeConn(b, "pipe")
	return srv, &peer{t: t, nc: a, fr: transport.NewReader(a, 1<<20), bubbled: true}
}

// With the defaults, an idle connection is probed after 27-30 s (the
// interval less up to 10% jitter) and aborted exactly 20 s after the probe
// when it goes unanswered.
func TestKeepaliveScheduleDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
		start := time.Now()
		m := p.recv()
		assert.Equal(t, transport.MethodKeepalive, m.Method)
		assert.Equal(t, "gw-1", *m.ID)
		probed := time.Since(start)
		assert.LessOrEqual(t, probed, DefaultKeepaliveInterval)
		assert.GreaterOrEqual(t, probed, DefaultKeepaliveInterval*9/10)
		p.expectAbort(transport.CodeKeepalive, transport.StringKeepalive)
		assert.Equal(t, probed+DefaultKeepaliveTimeout, time.Since(start))
		_ = srv.Close()
	})
}

// A probe is skipped while the peer is heard from: traffic every 20 s
// means the gateway never needs to send one.
func TestKeepaliveSkippedWhileTrafficFlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
		for i := range 10 {
			time.Sleep(20 * time.Second)
			id := "pt-" + itoa(i)
			p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`)
			m := p.recv()
			require.Equal(t, id, *m.ID, "only the answer may arrive, not a probe")
		}
		// Silence: the probe comes within one interval, then the abort.
		m := p.recv()
		assert.Equal(t, transport.MethodKeepalive, m.Method)
		p.expectAbort(transport.CodeKeepalive, transport.StringKeepalive)
		_ = srv.Close()
	})
}

// An answered probe resets the schedule and the connection lives on; the
// answer itself is not peer traffic, so an idle peer is probed every
// interval, not every other one.
func TestKeepaliveAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
		last := time.Now()
		for i := 1; i <= 5; i++ {
			m := p.recv()
			require.Equal(t, "gw-"+itoa(i), *m.ID)
			if i > 1 {
				assert.LessOrEqual(t, time.Since(last), DefaultKeepaliveInterval, "probed one interval after the answer")
			}
			time.Sleep(19 * time.Second) // slow but within the timeout
			p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
			last = time.Now()
		}
		_ = srv.Close()
	})
}

func TestInitTimeoutDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, nil)
		start := time.Now()
		for {
			m := p.recv()
			if m.Method == transport.MethodKeepalive {
				p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
				continue
			}
			require.Equal(t, transport.MethodCloseReason, m.Method)
			assert.Equal(t, transport.StringInitTimeout, m.CloseError.Error.Data.StringCode)
			break
		}
		assert.Equal(t, DefaultInitTimeout, time.Since(start))
		_ = srv.Close()
	})
}

// Both endpoints MUST monitor the connection: a client whose server never
// answers its _Keepalive aborts with KEEPALIVE too.
func TestClientMonitorsServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		cfg := ClientConfig()
		cfg.Metrics = metrics.New("test")
		c, err := NewClientConn(a, cfg, nil)
		require.NoError(t, err)
		server := &peer{t: t, nc: b, fr: transport.NewReader(b, 1<<20), bubbled: true}
		m := server.recv()
		require.Equal(t, transport.MethodKeepalive, m.Method)
		assert.Equal(t, "cl-1", *m.ID)
		server.expectAbort(transport.CodeKeepalive, transport.StringKeepalive)
		<-c.Done()
		assert.Equal(t, ReasonKeepalive, c.Reason())
	})
}

// onlyConnOf returns srv's one connection.
func onlyConnOf(t *testing.T, srv *Server) *Conn {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.conns, 1)
	for c := range srv.conns {
		return c
	}
	return nil
}

// Issue 26, item 22: the probe goes out exactly one keepalive interval
// (the connection's own, the configured one less its jitter) after the
// peer's last frame, not at the first tick after that: a peer heard from
// just after a tick was probed up to two intervals after it fell silent.
// Traffic is sent at several points of the schedule, the last one just
// after a tick and one just before, and the answer to a probe (which is no
// traffic) restarts nothing.
func TestKeepaliveProbeOneIntervalAfterTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
		defer func() { _ = srv.Close() }()
		iv := onlyConnOf(t, srv).interval()
		require.LessOrEqual(t, iv, DefaultKeepaliveInterval)
		require.GreaterOrEqual(t, iv, DefaultKeepaliveInterval*9/10)
		start := time.Now()
		for i, silence := range []time.Duration{iv / 2, iv + time.Second, iv - time.Second, 3 * iv / 2} {
			// The peer is heard from, then falls silent for less than an
			// interval at first; it answers every probe that comes.
			time.Sleep(silence)
			id := "pt-" + itoa(i)
			p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`)
			heard := time.Now()
			m := p.recv()
			for m.Method == transport.MethodKeepalive {
				// A probe that was due before this frame.
				p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
				m = p.recv()
			}
			require.Equal(t, id, *m.ID)
			m = p.recv()
			require.Equal(t, transport.MethodKeepalive, m.Method, "round %d", i)
			assert.Equal(t, iv, time.Since(heard), "round %d: probe one interval after the peer's last frame (%v into the test)", i, time.Since(start))
			p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
		}
	})
}
