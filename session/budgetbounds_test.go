package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Full is the admission test of new work: one byte below the limit there
// is room, at exactly the limit there is none.
func TestBudgetFullAtItsLimit(t *testing.T) {
	b := NewBudget(10)
	b.Reserve(9)
	assert.False(t, b.Full(), "one byte below the limit")
	b.Reserve(1)
	assert.True(t, b.Full(), "exactly at the limit")
	b.Reserve(1)
	assert.True(t, b.Full(), "one byte past the limit (a forced reservation)")
	b.Release(2)
	assert.False(t, b.Full(), "back below the limit")
}

// A budget of 0 or a negative size has no limit: it is never full, takes
// every reservation and reports its limit as 0. A nil budget is the same.
func TestBudgetWithoutLimitIsNeverFull(t *testing.T) {
	for _, limit := range []int64{0, -1} {
		b := NewBudget(limit)
		assert.False(t, b.Full(), "limit %d, empty", limit)
		b.Reserve(1 << 20)
		assert.False(t, b.Full(), "limit %d, 1 MiB held", limit)
		assert.True(t, b.TryReserve(1), "limit %d", limit)
		assert.EqualValues(t, 1<<20+1, b.Used(), "limit %d", limit)
		assert.Zero(t, b.Limit(), "limit %d", limit)
	}
	var none *Budget
	assert.False(t, none.Full())
	none.Reserve(1)
	assert.Zero(t, none.Used())
}

// Reserving no bytes (or a negative count) always succeeds and changes
// nothing, even on a budget already past its limit.
func TestBudgetEmptyReservations(t *testing.T) {
	b := NewBudget(10)
	b.Reserve(12)
	assert.True(t, b.TryReserve(0), "zero bytes fit even past the limit")
	assert.True(t, b.TryReserve(-3))
	b.Reserve(0)
	b.Reserve(-3)
	b.Release(0)
	b.Release(-3)
	assert.EqualValues(t, 12, b.Used())
	b.Release(12)
	assert.True(t, b.TryReserve(10), "every byte came back")
}
