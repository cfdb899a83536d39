package session

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// interned reports whether methodName hands out name without allocating,
// which it does only for a name in its table.
func interned(name []byte) bool {
	methodName(name)
	return testing.AllocsPerRun(10, func() { _ = methodName(name) }) == 0
}

// A method name seen before costs no allocation, up to 256 distinct names;
// past them a peer inventing names gets a fresh string each time and the
// table stops growing.
func TestMethodNamesInternedUpTo256(t *testing.T) {
	namesMu.RLock()
	held := len(names)
	namesMu.RUnlock()
	require.Less(t, held, 256, "the table is full before the test")
	t.Cleanup(func() { // the names this test added, so that it can run again
		namesMu.Lock()
		defer namesMu.Unlock()
		for k := range names {
			if strings.HasPrefix(k, "intern-test-") {
				delete(names, k)
			}
		}
	})

	for i := held; i < 256; i++ {
		name := []byte("intern-test-" + strconv.Itoa(i))
		require.True(t, interned(name), "name %d of 256 not interned", i+1)
		assert.Equal(t, string(name), methodName(name))
	}
	over := []byte("intern-test-over")
	assert.False(t, interned(over), "a 257th name was interned")
	assert.Equal(t, "intern-test-over", methodName(over))
	assert.True(t, interned([]byte("intern-test-"+strconv.Itoa(held))), "an interned name was dropped")
}
