package skills

import (
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without inotify (its instances used up: EMFILE) the registry still
// starts, says it polls and how often, and picks up a changed skill by
// polling the tree.
func TestWatchFallsBackToPolling(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("a", "acme.poll.a", "1.0.0"))
	noInotify := func() (*fsnotify.Watcher, error) { return nil, syscall.EMFILE }
	r, logs := newRegistry(t, Options{Dir: root, Watch: true, WatchPollInterval: 20 * time.Millisecond, newWatcher: noInotify})
	lines := logLines(t, logs, "cannot watch the skills folder with inotify; polling it instead")
	require.Len(t, lines, 1)
	assert.Equal(t, "polling", lines[0]["fallback"])
	assert.Equal(t, float64(20), lines[0]["interval"], "the interval, in ms")
	assert.Contains(t, lines[0]["error"], "too many open files")

	writeTree(t, root, map[string]string{"a/skill.toml": actionTOML("acme.poll.a", "1.0.10")}) // a different size: a stamp is blind to a same-size write within one clock tick
	require.Eventually(t, func() bool {
		s, err := r.Catalog().Resolve("acme.poll.a", "")
		return err == nil && s.Manifest.Version == "1.0.10"
	}, eventually, tick, "an edited skill")
	writeTree(t, root, actionPackage("b", "acme.poll.b", "1.0.0"))
	require.Eventually(t, func() bool {
		_, err := r.Catalog().Resolve("acme.poll.b", "")
		return err == nil
	}, eventually, tick, "a new skill")
}
