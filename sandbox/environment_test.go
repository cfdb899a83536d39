package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An environment's bounds hold exactly: a key of 128 bytes, 8 directories
// and 32 preloaded modules are accepted, one more of each is refused.
func TestEnvironmentBounds(t *testing.T) {
	dirs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("/opt/env/d%d", i)
		}
		return out
	}
	modules := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("m%d", i)
		}
		return out
	}
	assert.NoError(t, Environment{Key: strings.Repeat("k", 128), Preload: []string{"json"}}.validate())
	assert.ErrorContains(t, Environment{Key: strings.Repeat("k", 129), Preload: []string{"json"}}.validate(), "at most 128 printable ASCII bytes")
	assert.NoError(t, Environment{Key: "k", Paths: dirs(8)}.validate())
	assert.ErrorContains(t, Environment{Key: "k", Paths: dirs(9)}.validate(), "more than 8 directories")
	assert.NoError(t, Environment{Key: "k", Preload: modules(32)}.validate())
	assert.ErrorContains(t, Environment{Key: "k", Preload: modules(33)}.validate(), "more than 32 preloaded modules")
	assert.NoError(t, Environment{}.validate(), "no environment at all")
	assert.ErrorContains(t, Environment{Key: "k", Paths: []string{"/"}}.validate(), "not a clean absolute path")
}
