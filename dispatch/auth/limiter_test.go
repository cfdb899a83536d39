package auth

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func limited(name string, l Limits) *Identity {
	id := Anonymous(l)
	id.g.name = name
	return id
}

func TestAllowTokenBucket(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 2, Burst: 3})

	type step struct {
		advance time.Duration
		ok      bool
		wait    time.Duration
	}
	steps := []step{
		{0, true, 0}, {0, true, 0}, {0, true, 0}, // the bucket starts full
		{0, false, 500 * time.Millisecond},
		{499 * time.Millisecond, false, time.Millisecond},
		{time.Millisecond, true, 0},
		{0, false, 500 * time.Millisecond},
		{250 * time.Millisecond, false, 250 * time.Millisecond},
		{10 * time.Second, true, 0}, // refill is capped at the burst
		{0, true, 0},
		{0, true, 0},
		{0, false, 500 * time.Millisecond},
	}
	for i, s := range steps {
		clk.advance(s.advance)
		ok, wait := l.Allow(id)
		assert.Equal(t, s.ok, ok, "step %d", i)
		assert.InDelta(t, float64(s.wait), float64(wait), float64(time.Microsecond), "step %d: wait %v", i, wait)
	}
}

func TestAllowRefusalsDoNotConsume(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 1, Burst: 1})
	ok, _ := l.Allow(id)
	require.True(t, ok)
	for range 100 {
		ok, _ = l.Allow(id)
		require.False(t, ok)
	}
	clk.advance(time.Second)
	ok, _ = l.Allow(id)
	assert.True(t, ok, "a refused request takes no token")
}

func TestAllowUnlimited(t *testing.T) {
	l := NewLimiter(nil)
	id := limited("a", Limits{})
	for range 1000 {
		ok, wait := l.Allow(id)
		require.True(t, ok)
		require.Zero(t, wait)
	}
	var none *Identity
	ok, _ := l.Allow(none)
	assert.True(t, ok)
}

func TestAllowSlowRate(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 0.1, Burst: 1})
	ok, _ := l.Allow(id)
	require.True(t, ok)
	err := l.AllowRequest(id)
	require.ErrorIs(t, err, ErrRateLimited)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(10000), le.RetryAfterMillis())
	clk.advance(9999 * time.Millisecond)
	err = l.AllowRequest(id)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(1), le.RetryAfterMillis(), "rounded up, never 0")
}

func TestAllowIdentitiesAreIndependent(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	a := limited("a", Limits{RequestsPerSecond: 1, Burst: 1})
	b := limited("b", Limits{RequestsPerSecond: 1, Burst: 1})
	ok, _ := l.Allow(a)
	require.True(t, ok)
	ok, _ = l.Allow(a)
	require.False(t, ok)
	ok, _ = l.Allow(b)
	assert.True(t, ok)
}

func TestAllowClockBackwards(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 1, Burst: 1})
	ok, _ := l.Allow(id)
	require.True(t, ok)
	clk.advance(-time.Hour)
	ok, _ = l.Allow(id)
	assert.False(t, ok, "stepping back refills nothing")
	clk.advance(time.Second)
	ok, _ = l.Allow(id)
	assert.True(t, ok, "refill resumes from the new reference")
}

// A reload that changes limits keeps the bucket state of the identity.
func TestAllowFollowsReloadedLimits(t *testing.T) {
	const file = "identities:\n  - name: a\n    class: agent\n    tokens: [{{agent}}]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n    limits: {requests_per_second: RATE, burst: BURST}\n"
	write := func(rate, burst string) string {
		return expand(strings.NewReplacer("RATE", rate, "BURST", burst).Replace(file))
	}
	path := tempFile(t, write("1", "10"))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id, err := s.AuthenticateToken(tokAgent)
	require.NoError(t, err)

	for range 7 {
		ok, _ := l.Allow(id)
		require.True(t, ok)
	}
	// 3 tokens left; the new burst of 2 caps them, the new rate refills.
	writeAtomic(t, path, write("4", "2"))
	require.NoError(t, s.Reload())
	id, err = s.Revalidate(id)
	require.NoError(t, err)
	for range 2 {
		ok, _ := l.Allow(id)
		require.True(t, ok)
	}
	ok, wait := l.Allow(id)
	require.False(t, ok)
	assert.Equal(t, 250*time.Millisecond, wait)

	// Raising the burst does not add tokens: the bucket refills to it.
	writeAtomic(t, path, write("4", "100"))
	require.NoError(t, s.Reload())
	id, err = s.Revalidate(id)
	require.NoError(t, err)
	ok, _ = l.Allow(id)
	assert.False(t, ok)
	clk.advance(time.Second)
	for range 4 {
		ok, _ = l.Allow(id)
		require.True(t, ok)
	}
	ok, _ = l.Allow(id)
	assert.False(t, ok)

	// Unlimited, then limited again: the bucket starts from the state it had.
	writeAtomic(t, path, write("0", "0"))
	require.NoError(t, s.Reload())
	id, err = s.Revalidate(id)
	require.NoError(t, err)
	for range 50 {
		ok, _ = l.Allow(id)
		require.True(t, ok)
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l := NewLimiter(nil)
	id := limited("a", Limits{RequestsPerSecond: 1e6, Burst: 1e6})
	l.Allow(id)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { l.Allow(id) }))
}

func TestRunSlots(t *testing.T) {
	l := NewLimiter(nil)
	id := limited("a", Limits{ConcurrentRuns: 2})
	r1, ok := l.TryAcquireRun(id)
	require.True(t, ok)
	r2, err := l.AcquireRun(id)
	require.NoError(t, err)
	_, err = l.AcquireRun(id)
	require.ErrorIs(t, err, ErrTooManyRuns)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, RunRetryAfter, le.RetryAfter)
	runs, _ := l.InFlight("a")
	assert.Equal(t, 2, runs)

	r1()
	r1() // a second release is ignored
	runs, _ = l.InFlight("a")
	assert.Equal(t, 1, runs)
	r3, ok := l.TryAcquireRun(id)
	require.True(t, ok)
	_, ok = l.TryAcquireRun(id)
	require.False(t, ok)
	r2()
	r3()
	runs, _ = l.InFlight("a")
	assert.Zero(t, runs)
}

func TestConnSlotsFollowLoweredLimit(t *testing.T) {
	l := NewLimiter(nil)
	unlimited := limited("a", Limits{})
	var releases []func()
	for range 5 {
		r, ok := l.TryAcquireConn(unlimited)
		require.True(t, ok)
		releases = append(releases, r)
	}
	_, conns := l.InFlight("a")
	assert.Equal(t, 5, conns, "counted even when unlimited")

	capped := limited("a", Limits{MaxConnections: 3})
	_, err := l.AcquireConn(capped)
	require.ErrorIs(t, err, ErrTooManyConnections)
	for _, r := range releases[:3] {
		r()
	}
	r, err := l.AcquireConn(capped)
	require.NoError(t, err)
	_, err = l.AcquireConn(capped)
	require.ErrorIs(t, err, ErrTooManyConnections)
	r()
	for _, r := range releases[3:] {
		r()
	}
	_, conns = l.InFlight("a")
	assert.Zero(t, conns)
	_, conns = l.InFlight("nobody")
	assert.Zero(t, conns)

	var none *Identity
	rel, ok := l.TryAcquireConn(none)
	require.True(t, ok)
	rel()
}

func TestSlotsUnderContention(t *testing.T) {
	const (
		limit      = 3
		goroutines = 16
		rounds     = 500
	)
	l := NewLimiter(nil)
	id := limited("a", Limits{ConcurrentRuns: limit, MaxConnections: limit})
	var inRuns, inConns, maxRuns, maxConns, granted atomic.Int64
	track := func(cur, peak *atomic.Int64) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				if rel, ok := l.TryAcquireRun(id); ok {
					track(&inRuns, &maxRuns)
					granted.Add(1)
					inRuns.Add(-1)
					rel()
					rel()
				}
				if rel, ok := l.TryAcquireConn(id); ok {
					track(&inConns, &maxConns)
					inConns.Add(-1)
					rel()
				}
				l.Allow(id)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, maxRuns.Load(), int64(limit))
	assert.LessOrEqual(t, maxConns.Load(), int64(limit))
	assert.Positive(t, granted.Load())
	runs, conns := l.InFlight("a")
	assert.Zero(t, runs)
	assert.Zero(t, conns)
}

func TestBucketUnderContention(t *testing.T) {
	clk := newFakeClock() // never advanced: exactly the burst is granted
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 1, Burst: 100})
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := l.Allow(id); ok {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(100), granted.Load())
}
