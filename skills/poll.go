package skills

import (
	"errors"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"
)

// startPoller watches the tree without inotify: every WatchPollInterval
// it takes a stamp of the tree (every entry's path, size, mode and
// modification time) and reloads when the stamp changed. It stands in when
// the inotify watcher cannot be made, for instance when another process
// of the same user holds all its inotify instances.
func startPoller(r *Registry, cause error) *watcher {
	w := &watcher{r: r, stop: make(chan struct{}), done: make(chan struct{})}
	interval := r.opts.WatchPollInterval
	r.log.Warn().Err(cause).Str("dir", r.root).Str("fallback", "polling").Dur("interval", interval).
		Msg("cannot watch the skills folder with inotify; polling it instead")
	last := treeStamp(r.root)
	go w.pollLoop(interval, last)
	return w
}

func (w *watcher) pollLoop(interval time.Duration, last uint64) {
	defer close(w.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		stamp := treeStamp(w.r.root)
		if stamp == last {
			continue
		}
		last = stamp
		if _, err := w.r.Reload(); err != nil && !errors.Is(err, ErrRegistryClosed) {
			w.r.log.Error().Err(err).Msg("skills reload after file change failed")
		}
	}
}

// treeStamp hashes what a change under root alters, skipping the names
// loading ignores; symlinked folders are not followed, as in loading. A
// write that keeps a file's size within one tick of the file system's
// clock leaves the stamp as it was, and waits for the next change.
func treeStamp(root string) uint64 {
	h := fnv.New64a()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			_, _ = h.Write([]byte("!" + p + "\x00"))
			return nil
		}
		if p != root && ignoredName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		_, _ = h.Write([]byte(p + "\x00" + strconv.FormatInt(info.Size(), 10) + "\x00" +
			strconv.FormatUint(uint64(info.Mode()), 10) + "\x00" + strconv.FormatInt(info.ModTime().UnixNano(), 10) + "\x00"))
		return nil
	})
	return h.Sum64()
}
