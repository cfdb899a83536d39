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

// A failed initialization does not stop the init deadline: a peer that
// fails once and then goes quiet (answering only keepalives) is still
// closed with INIT_TIMEOUT exactly 30 s after it connected.
func TestInitTimeoutAfterFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, p := pipeServer(t, nil)
		defer func() { _ = srv.Close() }()
		start := time.Now()
		time.Sleep(time.Second)
		m := p.call("Initialize", `{"token":"bad"}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, "AUTH_REQUIRED", m.Error.Data.StringCode)
		for time.Since(start) <= DefaultInitTimeout {
			m := p.recv()
			if m.Method == transport.MethodKeepalive {
				p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
				continue
			}
			require.Equal(t, transport.MethodCloseReason, m.Method)
			assert.Equal(t, transport.StringInitTimeout, m.CloseError.Error.Data.StringCode)
			assert.Equal(t, DefaultInitTimeout, time.Since(start))
			p.expectEOF()
			return
		}
		t.Fatalf("still open %v after connecting", time.Since(start))
	})
}

// The documented default closes a connection at its third failed
// Initialize, not before: two failures leave it open and a success then
// still initializes it.
func TestInitFailuresDefaultBoundary(t *testing.T) {
	require.Equal(t, 3, DefaultMaxInitFailures, "the documented default")
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	for range 2 {
		m := p.call("Initialize", `{"token":"bad"}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, "AUTH_REQUIRED", m.Error.Data.StringCode)
	}
	p.initialize()
	assert.Nil(t, p.call("Echo", `{}`).Error)

	q := f.dial()
	for range 2 {
		require.NotNil(t, q.call("Initialize", `{"token":"bad"}`).Error)
	}
	q.request("Initialize", `{"token":"bad"}`)
	require.NotNil(t, q.recv().Error)
	q.expectAbort(transport.CodeApplication, "AUTH_REQUIRED")
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.ConnectionsClosed.WithLabelValues("pipe", "init_failed")) == 1
	}, 5*time.Second, time.Millisecond)
}
