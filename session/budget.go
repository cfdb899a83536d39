package session

import "sync/atomic"

// Budget bounds the bytes of answers queued for delivery across the whole
// gateway: every connection's write queue and every HTTP answer being
// built reserve from one Budget before they hold the bytes, and release
// them once written or dropped. A full budget refuses new work with
// OVERLOADED instead of growing the heap.
//
// A nil *Budget has no limit; all methods are safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes; limit <= 0 means no limit.
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit}
}

// TryReserve takes n bytes from the budget and reports whether they fit.
// Nothing is taken when they do not.
func (b *Budget) TryReserve(n int) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.limit <= 0 {
		b.used.Add(int64(n))
		return true
	}
	for {
		used := b.used.Load()
		if used+int64(n) > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+int64(n)) {
			return true
		}
	}
}

// Reserve takes n bytes whether or not they fit. It is for bytes the
// gateway must send regardless (a _CloseReason, an error answer), which
// still count so that the gauge tells the truth.
func (b *Budget) Reserve(n int) {
	if b != nil && n > 0 {
		b.used.Add(int64(n))
	}
}

// Release returns n bytes taken earlier.
func (b *Budget) Release(n int) {
	if b != nil && n > 0 {
		b.used.Add(-int64(n))
	}
}

// Full reports whether the budget has no room left. It is the cheap test
// of admission: work that would queue answers is refused while it holds.
func (b *Budget) Full() bool {
	if b == nil || b.limit <= 0 {
		return false
	}
	return b.used.Load() >= b.limit
}

// Used is the number of bytes currently reserved.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's size in bytes; 0 means no limit.
func (b *Budget) Limit() int64 {
	if b == nil || b.limit < 0 {
		return 0
	}
	return b.limit
}
