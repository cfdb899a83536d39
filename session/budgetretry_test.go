package session

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
)

// Notify retries a full gateway budget every 20 ms, not in a busy loop:
// each attempt counts a budget refusal, and timers never fire early, so
// over the whole call there can be at most one attempt per 20 ms and the
// first. Here the budget stays full until Notify gives up after 200 ms.
func TestNotifyBudgetRetryInterval(t *testing.T) {
	const limit, tick = 8192, 2000
	budget := NewBudget(limit)
	budget.Reserve(limit - (tick - 1))
	p, mt := notifyBubble(t, budget)
	p.bubbled = false // real time here: reads get a deadline
	start := time.Now()
	r := readReport(t, p, p.request("Send", `{"sizes":[2000],"wait":true,"timeout_ms":200}`))
	elapsed := time.Since(start)
	assert.Equal(t, []string{"notify: context deadline exceeded"}, r.Errs)
	attempts := testutil.ToFloat64(mt.BudgetRefusals.WithLabelValues("framed"))
	assert.GreaterOrEqual(t, attempts, 1.0)
	assert.LessOrEqual(t, attempts, float64(elapsed/(20*time.Millisecond)+1),
		"attempts in %v", elapsed)
}
