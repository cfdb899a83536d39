package skills

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A burst of events reloads one quiet period after its last event.
func TestDebounceQuietPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDebouncer(100 * time.Millisecond)
		defer d.timer.Stop()
		start := time.Now()
		d.arm(start)
		time.Sleep(50 * time.Millisecond)
		d.arm(time.Now())
		<-d.timer.C
		assert.Equal(t, 150*time.Millisecond, time.Since(start))
	})
}

// A steady stream of events (every 30 ms, period 100 ms) cannot hold the
// reload back more than 8 periods after the burst's first event.
func TestDebounceSteadyStreamBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDebouncer(100 * time.Millisecond)
		defer d.timer.Stop()
		start := time.Now()
		d.arm(start)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for fired := false; !fired; {
			select {
			case <-d.timer.C:
				fired = true
			case now := <-tick.C:
				d.arm(now)
			}
		}
		assert.Equal(t, 800*time.Millisecond, time.Since(start))
	})
}

// Attribute-only changes and ignored names do not reload; anything else
// does, a change of content with its attributes too.
func TestRelevantEvents(t *testing.T) {
	for _, tc := range []struct {
		ev   fsnotify.Event
		want bool
	}{
		{fsnotify.Event{Name: "/s/a/skill.toml", Op: fsnotify.Chmod}, false},
		{fsnotify.Event{Name: "/s/a/skill.toml", Op: fsnotify.Write | fsnotify.Chmod}, true},
		{fsnotify.Event{Name: "/s/a/skill.toml", Op: fsnotify.Write}, true},
		{fsnotify.Event{Name: "/s/a/.skill.toml.swp", Op: fsnotify.Create}, false},
		{fsnotify.Event{Name: "/s/a/skill.toml~", Op: fsnotify.Write}, false},
		{fsnotify.Event{Name: "/s/a", Op: fsnotify.Remove}, true},
	} {
		assert.Equal(t, tc.want, relevantEvent(tc.ev), "%v", tc.ev)
	}
}

// testWatcher is a watcher of r whose loop is fed by the test.
func testWatcher(t *testing.T, r *Registry) *watcher {
	t.Helper()
	fsw, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	return &watcher{fsw: fsw, r: r, debounce: time.Millisecond, stop: make(chan struct{}), done: make(chan struct{})}
}

// A watch error (an overflowed event queue loses events) rescans the tree
// and reloads, as an event does, and is logged.
func TestWatchErrorRescans(t *testing.T) {
	root := t.TempDir()
	r, logs := newRegistry(t, Options{Dir: root})
	w := testWatcher(t, r)
	errs := make(chan error, 1)
	go w.loop(nil, errs)
	defer func() { require.NoError(t, w.close()) }()

	writeTree(t, root, actionPackage("late", "acme.late.x", "1.0.0"))
	errs <- fsnotify.ErrEventOverflow
	require.Eventually(t, func() bool {
		_, err := r.Catalog().Resolve("acme.late.x", "")
		return err == nil
	}, eventually, tick)
	assert.Len(t, logLines(t, logs, "skills watcher error, rescanning"), 1)
	assert.Contains(t, w.fsw.WatchList(), filepath.Join(r.Dir(), "late", "code"), "the rescan watches the new folders")
}

// The loop ends when the watcher closes either of its channels.
func TestWatchLoopEndsWithItsChannels(t *testing.T) {
	r, _ := newRegistry(t, Options{Dir: t.TempDir()})
	for name, feed := range map[string]func(w *watcher){
		"events": func(w *watcher) {
			ev := make(chan fsnotify.Event)
			close(ev)
			w.loop(ev, nil)
		},
		"errors": func(w *watcher) {
			errs := make(chan error)
			close(errs)
			w.loop(nil, errs)
		},
	} {
		w := testWatcher(t, r)
		done := make(chan struct{})
		go func() {
			defer close(done)
			feed(w)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the loop did not end when its channel closed", name)
		}
		require.NoError(t, w.fsw.Close())
	}
}

// Every folder of the tree is watched but hidden ones (.git) and what is
// under them; a folder moved out of the tree is no longer watched.
func TestWatchedFolders(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, merge(actionPackage("a", "acme.w.a", "1.0.0"), map[string]string{
		".git/objects/x": "x", "a/.cache/y": "y", "b/sub/z": "z",
	}))
	r, logs := newRegistry(t, Options{Dir: root})
	w := testWatcher(t, r)
	defer func() { require.NoError(t, w.fsw.Close()) }()
	base := r.Dir()
	rel := func() []string {
		var out []string
		for _, p := range w.fsw.WatchList() {
			rp, err := filepath.Rel(base, p)
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(rp))
		}
		slices.Sort(out)
		return out
	}
	w.syncWatches()
	assert.Equal(t, []string{".", "a", "a/code", "b", "b/sub"}, rel())

	require.NoError(t, os.Rename(filepath.Join(base, "b"), filepath.Join(t.TempDir(), "b")))
	w.syncWatches()
	assert.Equal(t, []string{".", "a", "a/code"}, rel())
	assert.Empty(t, logLines(t, logs, "skills watcher cannot watch some folders (inotify limit?); their changes need a manual reload"))
}

// A reload the watcher starts logs no failure when it succeeds, nor when
// the registry was closed meanwhile.
func TestWatchReloadFailureLogOnlyForFailures(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("a", "acme.quiet.a", "1.0.0"))
	r, logs := newRegistry(t, Options{Dir: root})
	fsw, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	defer func() { require.NoError(t, fsw.Close()) }()
	synctest.Test(t, func(t *testing.T) {
		w := &watcher{fsw: fsw, r: r, debounce: 10 * time.Millisecond, stop: make(chan struct{}), done: make(chan struct{})}
		errs := make(chan error)
		go w.loop(nil, errs)
		errs <- fsnotify.ErrEventOverflow
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, r.Close())
		errs <- fsnotify.ErrEventOverflow
		time.Sleep(time.Second)
		synctest.Wait()
		close(w.stop)
		<-w.done
	})
	assert.Len(t, logLines(t, logs, "skills watcher error, rescanning"), 2)
	assert.Empty(t, logLines(t, logs, "skills reload after file change failed"))
	assert.Len(t, logLines(t, logs, "skill catalog loaded"), 2, "the first reload ran: one line at start, one after the event")
}
