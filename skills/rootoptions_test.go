package skills

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The root is served by its real path: a symlink to the skills folder is
// resolved once, at start.
func TestRootSymlinkResolved(t *testing.T) {
	real := t.TempDir()
	writeTree(t, real, actionPackage("a", "acme.root.a", "1.0.0"))
	link := filepath.Join(t.TempDir(), "skills")
	require.NoError(t, os.Symlink(real, link))
	want, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)

	r, _ := newRegistry(t, Options{Dir: link})
	assert.Equal(t, want, r.Dir())
	_, err = r.Catalog().Resolve("acme.root.a", "")
	require.NoError(t, err)

	_, err = NewRegistry(Options{Dir: filepath.Join(t.TempDir(), "missing")})
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "skills dir: ")
}

// The watcher waits 250 ms after a burst of events unless told otherwise,
// and says so in its start line.
func TestWatchDebounceDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want float64 // milliseconds, as logged
	}{
		{"default", Options{}, 250},
		{"set", Options{WatchDebounce: 20 * time.Millisecond}, 20},
	} {
		tc.opts.Dir, tc.opts.Watch = t.TempDir(), true
		_, logs := newRegistry(t, tc.opts)
		lines := logLines(t, logs, "watching skills folder")
		require.Len(t, lines, 1, tc.name)
		assert.Equal(t, tc.want, lines[0]["debounce"], tc.name)
	}
}
