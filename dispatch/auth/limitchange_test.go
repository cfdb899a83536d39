package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reload that changes only the rate (the burst stays) refills at the new
// rate from the next call; one that changes nothing keeps the bucket as it
// is.
func TestAllowAdoptsChangedRateAlone(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	slow := limited("a", Limits{RequestsPerSecond: 1, Burst: 2})
	for range 2 {
		ok, _ := l.Allow(slow)
		require.True(t, ok)
	}
	ok, wait := l.Allow(slow)
	require.False(t, ok)
	assert.Equal(t, time.Second, wait)

	same := limited("a", Limits{RequestsPerSecond: 1, Burst: 2})
	ok, wait = l.Allow(same)
	require.False(t, ok)
	assert.Equal(t, time.Second, wait, "unchanged limits keep the empty bucket")

	fast := limited("a", Limits{RequestsPerSecond: 4, Burst: 2})
	ok, wait = l.Allow(fast)
	require.False(t, ok)
	assert.Equal(t, 250*time.Millisecond, wait)
	clk.advance(250 * time.Millisecond)
	ok, _ = l.Allow(fast)
	assert.True(t, ok)
}

// A rate with a burst of 0 holds one request.
func TestAllowBurstAtLeastOne(t *testing.T) {
	clk := newFakeClock()
	l := NewLimiter(clk.now)
	id := limited("a", Limits{RequestsPerSecond: 2})
	ok, _ := l.Allow(id)
	require.True(t, ok)
	ok, wait := l.Allow(id)
	require.False(t, ok)
	assert.Equal(t, 500*time.Millisecond, wait)
}

// Two limiters keep separate counts for the same identity.
func TestLimitersAreSeparate(t *testing.T) {
	a, b := NewLimiter(nil), NewLimiter(nil)
	id := limited("a", Limits{ConcurrentRuns: 1})
	rel, ok := a.TryAcquireRun(id)
	require.True(t, ok)
	defer rel()
	relB, ok := b.TryAcquireRun(id)
	require.True(t, ok, "the other limiter has its own slot")
	defer relB()
	_, ok = a.TryAcquireRun(id)
	assert.False(t, ok)
}

// Identities print as "name (class)" in logs; no identity as "<none>".
func TestIdentityString(t *testing.T) {
	pol, err := Parse([]byte(expand(goodFile)), ParseOptions{})
	require.NoError(t, err)
	assert.Equal(t, "dash (dashboard)", pol.Identity("dash").String())
	var none *Identity
	assert.Equal(t, "<none>", none.String())
}
