package auth

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A refused connection is told to come back in 5 s, a refused run in 1 s:
// connections are long-lived, run slots free up within a run.
func TestRefusalRetryHints(t *testing.T) {
	l := NewLimiter(nil)
	id := limited("a", Limits{MaxConnections: 1, ConcurrentRuns: 1})
	rc, err := l.AcquireConn(id)
	require.NoError(t, err)
	defer rc()
	rr, err := l.AcquireRun(id)
	require.NoError(t, err)
	defer rr()

	_, err = l.AcquireConn(id)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(5000), le.RetryAfterMillis())

	_, err = l.AcquireRun(id)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(1000), le.RetryAfterMillis())
}
