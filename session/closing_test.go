package session

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection aborted while the peer reads nothing: its _CloseReason
// waits behind an answer whose write never completes, the write times
// out, and the connection closes with the abort's reason. The bytes of
// both the answer and the unsent _CloseReason go back to the budget.
func TestAbortBehindStuckWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := NewBudget(0)
		srv, _, _, p, mt := gatedServer(t, func(c *Config) {
			c.Budget = budget
			c.WriteTimeout = 10 * time.Second
		})
		defer func() { _ = srv.Close() }()
		p.send(`{"jsonrpc":"2.0","method":"Big","params":{"n":8000},"id":"b-1"}`)
		synctest.Wait() // the answer is being written; the peer reads nothing
		require.Positive(t, budget.Used())
		p.writeRaw("zzzzzzzzz") // no frame header: a parse error aborts
		synctest.Wait()
		require.Equal(t, 0.0, testutil.ToFloat64(mt.ConnectionsClosed.WithLabelValues("pipe", "parse_error")),
			"closed before the write under way timed out")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1.0, testutil.ToFloat64(mt.ConnectionsClosed.WithLabelValues("pipe", "parse_error")))
		assert.Zero(t, budget.Used(), "bytes of unsent frames still held")
		_, err := p.tryRecv(0)
		assert.Error(t, err, "nothing was sent")
	})
}
