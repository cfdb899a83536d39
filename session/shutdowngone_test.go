package session

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Shutdown's deadline holds for the connections still busy when others
// have already gone: an idle connection closes at once, and the call
// still running on the other one is answered with SERVER_SHUTDOWN when
// the deadline passes, not left to run on.
func TestShutdownDeadlineAfterIdleConnectionsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, busy := pipeServer(t, func(c *Config) { c.InitTimeout = 0 })
		defer func() { _ = srv.Close() }()
		a, b := net.Pipe()
		srv.ServeConn(b, "pipe")
		idle := &peer{t: t, nc: a, fr: transport.NewReader(a, 1<<20), bubbled: true}
		busy.initialize()
		idle.initialize()
		id := busy.request("Block", `{}`)
		synctest.Wait()
		require.Equal(t, 2, srv.Connections())

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(ctx) }()
		idle.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		synctest.Wait()
		assert.Equal(t, 1, srv.Connections())

		m := busy.recv()
		require.NotNil(t, m.ID, "the answer to the running call first: %+v", m)
		assert.Equal(t, id, *m.ID)
		require.NotNil(t, m.Error)
		assert.Equal(t, transport.StringServerShutdown, m.Error.Data.StringCode)
		assert.Equal(t, time.Second, time.Since(start), "answered when the deadline passed")
		busy.expectAbort(transport.CodeApplication, transport.StringServerShutdown)
		assert.ErrorIs(t, <-done, context.DeadlineExceeded)
		assert.Zero(t, srv.Connections())
	})
}
