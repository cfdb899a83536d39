package session

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBudgetRefusesPastItsLimit(t *testing.T) {
	b := NewBudget(10)
	assert.True(t, b.TryReserve(10), "exactly the limit fits")
	assert.False(t, b.TryReserve(1), "one byte over does not")
	assert.EqualValues(t, 10, b.Used(), "a refusal takes nothing")
	b.Release(4)
	assert.True(t, b.TryReserve(4))
	assert.False(t, b.TryReserve(1))
	b.Reserve(5)
	assert.EqualValues(t, 15, b.Used(), "a forced reservation counts past the limit")
	assert.EqualValues(t, 10, b.Limit())
}

func TestBudgetNilAndUnlimited(t *testing.T) {
	var nilBudget *Budget
	assert.True(t, nilBudget.TryReserve(1<<40))
	nilBudget.Release(1)
	assert.Zero(t, nilBudget.Used())
	assert.Zero(t, nilBudget.Limit())

	unlimited := NewBudget(0)
	assert.True(t, unlimited.TryReserve(1<<40))
	assert.EqualValues(t, 1<<40, unlimited.Used(), "an unlimited budget still counts")
}

func TestBudgetConcurrentReservationsNeverOvershoot(t *testing.T) {
	b := NewBudget(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if b.TryReserve(7) {
					mu.Lock()
					granted += 7
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, granted, 1000)
	assert.EqualValues(t, granted, b.Used())
}
