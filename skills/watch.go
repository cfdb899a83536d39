package skills

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// maxWatchDelayFactor bounds how long a steady stream of events can hold a
// reload back: at most this many debounce periods after the first event.
const maxWatchDelayFactor = 8

// watcher reloads the registry when files under its root change. Each
// folder of the tree is watched (inotify is not recursive); after every
// burst of events the set of watched folders is brought in line with the
// tree before the reload reads it, so folders created in the meantime,
// and their contents, are never missed.
type watcher struct {
	fsw      *fsnotify.Watcher // nil when polling
	r        *Registry
	debounce time.Duration
	stop     chan struct{}
	done     chan struct{}
}

// startWatcher watches the tree with inotify or, when no inotify watcher
// can be had, polls it (see startPoller): the gateway keeps serving and
// picking up changes either way.
func startWatcher(r *Registry) (*watcher, error) {
	fsw, err := r.opts.newWatcher()
	if err != nil {
		return startPoller(r, err), nil
	}
	w := &watcher{fsw: fsw, r: r, debounce: r.opts.WatchDebounce,
		stop: make(chan struct{}), done: make(chan struct{})}
	w.syncWatches()
	r.log.Info().Str("dir", r.root).Dur("debounce", w.debounce).Msg("watching skills folder")
	go w.loop(fsw.Events, fsw.Errors)
	return w, nil
}

func (w *watcher) close() error {
	close(w.stop)
	<-w.done
	if w.fsw == nil {
		return nil
	}
	return w.fsw.Close()
}

// loop reloads once events settle (see debouncer). It takes the
// watcher's channels so that a test can send the errors (an inotify queue
// overflow) that a real tree does not produce on demand.
func (w *watcher) loop(events <-chan fsnotify.Event, errs <-chan error) {
	defer close(w.done)
	d := newDebouncer(w.debounce)
	defer d.timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if relevantEvent(ev) {
				d.arm(time.Now())
			}
		case err, ok := <-errs:
			if !ok {
				return
			}
			// On overflow events were lost: a full rescan covers them.
			w.r.log.Warn().Err(err).Msg("skills watcher error, rescanning")
			d.arm(time.Now())
		case <-d.timer.C:
			d.armed = false
			w.syncWatches()
			if _, err := w.r.Reload(); err != nil && !errors.Is(err, ErrRegistryClosed) {
				w.r.log.Error().Err(err).Msg("skills reload after file change failed")
			}
		}
	}
}

// debouncer fires its timer once no event came for one period, or
// maxWatchDelayFactor periods after the first event of a burst, so a
// steady stream of writes cannot hold a reload back for ever.
type debouncer struct {
	period time.Duration
	timer  *time.Timer
	first  time.Time
	armed  bool
}

func newDebouncer(period time.Duration) *debouncer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &debouncer{period: period, timer: t}
}

func (d *debouncer) arm(now time.Time) {
	if !d.armed {
		d.first, d.armed = now, true
	}
	wait := min(d.period, d.first.Add(maxWatchDelayFactor*d.period).Sub(now))
	d.timer.Reset(max(wait, 0))
}

// relevantEvent drops attribute-only changes and ignored names (editor
// swap files and the like); the rename that commits an editor's temp file
// arrives as a Create of the real name.
func relevantEvent(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	return !ignoredName(filepath.Base(ev.Name))
}

// syncWatches watches every folder of the tree and unwatches the ones
// gone. Symlinked folders are not followed, as in loading.
func (w *watcher) syncWatches() {
	want := map[string]bool{}
	_ = filepath.WalkDir(w.r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != w.r.root && ignoredName(d.Name()) {
			return fs.SkipDir
		}
		want[p] = true
		return nil
	})
	have := map[string]bool{}
	for _, p := range w.fsw.WatchList() {
		have[p] = true
		if !want[p] {
			_ = w.fsw.Remove(p) // usually gone already
		}
	}
	var failed []string
	for p := range want {
		if have[p] {
			continue
		}
		if err := w.fsw.Add(p); err != nil {
			failed = append(failed, p)
		}
	}
	if len(failed) > 0 {
		w.r.log.Warn().Strs("dirs", failed).Msg("skills watcher cannot watch some folders (inotify limit?); their changes need a manual reload")
	}
}
