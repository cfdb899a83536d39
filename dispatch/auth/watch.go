package auth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultPollInterval is how often Watch checks the file when it cannot
// watch it with inotify.
const DefaultPollInterval = 2 * time.Second

// Watch reloads the file whenever it may have changed, until ctx is done.
//
// It watches the file's directory, not the file: editors that write a new
// file and rename it over the old one, and Kubernetes ConfigMap and Secret
// volumes that swap a symlink, replace the inode a file watch would follow.
// Any event in the directory starts (or restarts) a debounce timer of
// Options.Debounce; when it fires the file is reloaded, which does nothing
// if the content is unchanged. A bad file fails closed, as with Reload.
// When no inotify watcher can be had (the user's inotify instances are
// used up, or the kernel has none) it polls the file every
// DefaultPollInterval instead, and logs a warning saying so.
//
// Watch returns once watching has begun; wait blocks until the watcher has
// stopped, which happens after ctx is done.
func (s *Store) Watch(ctx context.Context) (wait func(), err error) {
	return s.watch(ctx, fsnotify.NewWatcher, DefaultPollInterval)
}

// watch is Watch with its inotify watcher's constructor and the polling
// interval as parameters: tests make the constructor fail.
func (s *Store) watch(ctx context.Context, newWatcher func() (*fsnotify.Watcher, error), interval time.Duration) (func(), error) {
	done := make(chan struct{})
	w, err := newWatcher()
	if err != nil {
		s.opts.Logger.Warn().Err(fmt.Errorf("watch auth file: %w", err)).Str("file", s.path).
			Str("fallback", "polling").Dur("interval", interval).
			Msg("cannot watch the auth file with inotify; polling it instead")
		last, _ := os.Stat(s.path) // before returning: a change after it is seen
		go func() {
			defer close(done)
			s.pollLoop(ctx, interval, last)
		}()
		return func() { <-done }, nil
	}
	if err := w.Add(filepath.Dir(s.path)); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch auth file: %w", err)
	}
	s.opts.Logger.Info().Str("file", s.path).Dur("debounce", s.opts.Debounce).Msg("watching auth file")
	go func() {
		defer close(done)
		defer w.Close()
		s.watchLoop(ctx, w.Events, w.Errors)
	}()
	return func() { <-done }, nil
}

// pollLoop reloads the file whenever what stat says of it (through a
// symlink, as a swapped ConfigMap link) changed, until ctx is done.
func (s *Store) pollLoop(ctx context.Context, interval time.Duration, last os.FileInfo) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur, _ := os.Stat(s.path)
		if changedFile(last, cur) {
			last = cur
			_ = s.Reload() // logged by Reload
		}
	}
}

// changedFile reports whether a file was written or replaced between two
// stats (nil: it could not be read).
func changedFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a != b
	}
	return !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime())
}

// watchLoop takes the watcher's channels rather than the watcher so that
// a test can send the errors (an inotify queue overflow) that a real
// directory does not produce on demand.
func (s *Store) watchLoop(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
			timer.Reset(s.opts.Debounce)
		case err, ok := <-errs:
			if !ok {
				return
			}
			// An overflow loses events, so reload to be sure.
			s.opts.Logger.Warn().Err(err).Str("file", s.path).Msg("auth file watch error")
			timer.Reset(s.opts.Debounce)
		case <-timer.C:
			_ = s.Reload() // logged by Reload
		}
	}
}
