package auth

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Retry hints for refusals that have no computable delay.
const (
	RunRetryAfter  = time.Second     // a run slot is usually freed within a run's duration
	ConnRetryAfter = 5 * time.Second // connections are long-lived
)

// Limiter enforces identities' fair-use limits: a token bucket of requests,
// a count of runs in flight and a count of connections, each per identity.
// It is safe for concurrent use.
//
// State is keyed by identity name, so it survives reloads of the auth
// file, and limits are read from the Identity passed in on every call, so
// a reload that changes them applies at the next call:
//   - requests: tokens accrued so far are kept, capped at the new burst;
//     refill continues at the new rate. A bucket that was never limited
//     starts full.
//   - runs and connections: the in-flight count is always kept, even when
//     unlimited, so a new limit sees the true count; lowering a limit below
//     it refuses new acquisitions until enough are released, and never
//     cancels what is running.
//
// Different identities share no lock: each has its own entry, found once
// per Identity version through a pointer cached on it. The entries of
// identities removed from the file are kept (a few dozen bytes each).
type Limiter struct {
	now     func() time.Time
	mu      sync.Mutex             // guards entries
	entries map[string]*limitEntry // by identity name
}

type limiterCache struct {
	l *Limiter
	e *limitEntry
}

type limitEntry struct {
	mu     sync.Mutex // guards the bucket fields below
	rate   float64    // tokens per second; 0: never limited yet
	burst  float64
	tokens float64
	last   time.Time

	runs  atomic.Int64
	conns atomic.Int64
}

// NewLimiter returns a Limiter reading time from now (nil: time.Now).
func NewLimiter(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, entries: map[string]*limitEntry{}}
}

func (l *Limiter) entry(id *Identity) *limitEntry {
	if c := id.g.lim.Load(); c != nil && c.l == l {
		return c.e
	}
	l.mu.Lock()
	e := l.entries[id.g.name]
	if e == nil {
		e = &limitEntry{}
		l.entries[id.g.name] = e
	}
	l.mu.Unlock()
	id.g.lim.Store(&limiterCache{l: l, e: e})
	return e
}

// Allow takes one request from the identity's bucket. When the bucket is
// empty it returns false and how long until a request would be allowed.
// It does not allocate once the identity has been seen. A nil identity
// is not limited.
func (l *Limiter) Allow(id *Identity) (ok bool, wait time.Duration) {
	lim := id.Limits()
	if lim.RequestsPerSecond <= 0 {
		return true, 0
	}
	e := l.entry(id)
	now := l.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refill(now, lim)
	if e.tokens >= 1 {
		e.tokens--
		return true, 0
	}
	need := (1 - e.tokens) / e.rate
	return false, time.Duration(math.Ceil(need * float64(time.Second)))
}

// refill brings the bucket to now and adopts changed limits. Guarded by
// e.mu.
func (e *limitEntry) refill(now time.Time, lim Limits) {
	rate, burst := lim.RequestsPerSecond, float64(max(lim.Burst, 1))
	if e.rate == 0 {
		e.rate, e.burst, e.tokens, e.last = rate, burst, burst, now
		return
	}
	if dt := now.Sub(e.last); dt > 0 {
		e.tokens = min(e.burst, e.tokens+dt.Seconds()*e.rate)
	}
	// A clock stepping back only moves the reference; it never refills.
	e.last = now
	if rate != e.rate || burst != e.burst {
		e.rate, e.burst = rate, burst
		e.tokens = min(e.tokens, burst)
	}
}

// AllowRequest is Allow returning a *LimitError wrapping ErrRateLimited;
// it allocates only when refusing.
func (l *Limiter) AllowRequest(id *Identity) error {
	if ok, wait := l.Allow(id); !ok {
		return &LimitError{Err: ErrRateLimited, RetryAfter: wait}
	}
	return nil
}

// TryAcquireRun takes one of the identity's run slots (execute_skill,
// run_code). On success, release must be called once the run is over;
// calling it again does nothing. A nil identity is not limited.
func (l *Limiter) TryAcquireRun(id *Identity) (release func(), ok bool) {
	if id == nil {
		return func() {}, true
	}
	return acquire(&l.entry(id).runs, id.g.limits.ConcurrentRuns)
}

// TryAcquireConn takes one of the identity's connection slots; release it
// when the connection closes.
func (l *Limiter) TryAcquireConn(id *Identity) (release func(), ok bool) {
	if id == nil {
		return func() {}, true
	}
	return acquire(&l.entry(id).conns, id.g.limits.MaxConnections)
}

// AcquireRun is TryAcquireRun returning a *LimitError wrapping
// ErrTooManyRuns.
func (l *Limiter) AcquireRun(id *Identity) (release func(), err error) {
	release, ok := l.TryAcquireRun(id)
	if !ok {
		return nil, &LimitError{Err: ErrTooManyRuns, RetryAfter: RunRetryAfter}
	}
	return release, nil
}

// AcquireConn is TryAcquireConn returning a *LimitError wrapping
// ErrTooManyConnections.
func (l *Limiter) AcquireConn(id *Identity) (release func(), err error) {
	release, ok := l.TryAcquireConn(id)
	if !ok {
		return nil, &LimitError{Err: ErrTooManyConnections, RetryAfter: ConnRetryAfter}
	}
	return release, nil
}

func acquire(c *atomic.Int64, limit int) (func(), bool) {
	for {
		n := c.Load()
		if limit > 0 && n >= int64(limit) {
			return nil, false
		}
		if c.CompareAndSwap(n, n+1) {
			break
		}
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			c.Add(-1)
		}
	}, true
}

// InFlight returns the runs and connections the identity of that name
// holds now, for metrics and tests.
func (l *Limiter) InFlight(name string) (runs, conns int) {
	l.mu.Lock()
	e := l.entries[name]
	l.mu.Unlock()
	if e == nil {
		return 0, 0
	}
	return int(e.runs.Load()), int(e.conns.Load())
}
