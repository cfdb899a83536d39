package session

import (
	"sync"
	"sync/atomic"
)

// Budget bounds the bytes of answers queued for delivery across the whole
// gateway: every connection's write queue and every HTTP answer being
// built reserve from one Budget before they hold the bytes, and release
// them once written or dropped. A full budget refuses new work with
// OVERLOADED instead of growing the heap.
//
// Framed connections also charge what they hold to their owner's Share
// (the identity Initialize established): with an owner limit, no one
// identity can fill the budget and get everyone else refused.
//
// A nil *Budget has no limit; all methods are safe for concurrent use.
type Budget struct {
	limit      int64
	ownerLimit int64 // bytes one owner's connections may hold; 0: no such bound
	used       atomic.Int64

	mu     sync.Mutex        // guards owners
	owners map[string]*Share // the shares in use, by owner
}

// NewBudget returns a budget of limit bytes; limit <= 0 means no limit.
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit}
}

// NewFairBudget returns a budget of limit bytes of which one owner may
// hold at most ownerFraction (0 < ownerFraction <= 1, at least one byte);
// a lone owner can still use its part while the rest stays free for the
// others. ownerFraction 1, or no limit, bounds owners only by the budget.
func NewFairBudget(limit int64, ownerFraction float64) *Budget {
	b := NewBudget(limit)
	if limit > 0 && ownerFraction > 0 && ownerFraction < 1 {
		b.ownerLimit = max(1, int64(float64(limit)*ownerFraction))
	}
	return b
}

// OwnerLimit is how many bytes one owner may hold; 0 means only the
// budget's own limit applies.
func (b *Budget) OwnerLimit() int64 {
	if b == nil {
		return 0
	}
	return b.ownerLimit
}

// Share is one owner's part of a Budget: the bytes that owner's
// connections hold. It is counted beside the budget, not instead of it:
// the bytes are reserved from the Budget as before, and the Share only
// tells whether the owner may take more. A nil *Share has no limit; all
// methods are safe for concurrent use.
type Share struct {
	b     *Budget
	owner string
	used  atomic.Int64
	refs  int // guarded by b.mu
}

// Join returns owner's share, counting one more holder of it; every Join
// is matched by one Leave. A nil budget gives a nil share.
func (b *Budget) Join(owner string) *Share {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.owners[owner]
	if s == nil {
		if b.owners == nil {
			b.owners = make(map[string]*Share)
		}
		s = &Share{b: b, owner: owner}
		b.owners[owner] = s
	}
	s.refs++
	return s
}

// Leave drops one holder of the share; the last one forgets it.
func (s *Share) Leave() {
	if s == nil {
		return
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if s.refs--; s.refs == 0 {
		delete(s.b.owners, s.owner)
	}
}

// Add counts n more bytes held by the owner (negative: released).
func (s *Share) Add(n int) {
	if s != nil && n != 0 {
		s.used.Add(int64(n))
	}
}

// Used is the number of bytes the owner holds.
func (s *Share) Used() int64 {
	if s == nil {
		return 0
	}
	return s.used.Load()
}

// Fits reports whether the owner may take n more bytes. An owner holding
// nothing may always take one frame, so that an answer larger than the
// share is still delivered on its own.
func (s *Share) Fits(n int) bool {
	if s == nil || s.b.ownerLimit <= 0 {
		return true
	}
	used := s.used.Load()
	return used == 0 || used+int64(n) <= s.b.ownerLimit
}

// Full reports whether the owner holds its whole share: its new work is
// refused, as everyone's is while the budget itself is full.
func (s *Share) Full() bool {
	if s == nil || s.b.ownerLimit <= 0 {
		return false
	}
	return s.used.Load() >= s.b.ownerLimit
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
