package auth

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch reloads the file whenever it may have changed, until ctx is done.
//
// It watches the file's directory, not the file: editors that write a new
// file and rename it over the old one, and Kubernetes ConfigMap and Secret
// volumes that swap a symlink, replace the inode a file watch would follow.
// Any event in the directory starts (or restarts) a debounce timer of
// Options.Debounce; when it fires the file is reloaded, which does nothing
// if the content is unchanged. A bad file fails closed, as with Reload.
//
// Watch returns once watching has begun; wait blocks until the watcher has
// stopped, which happens after ctx is done.
func (s *Store) Watch(ctx context.Context) (wait func(), err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch auth file: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch auth file: %w", err)
	}
	s.opts.Logger.Info().Str("file", s.path).Dur("debounce", s.opts.Debounce).Msg("watching auth file")
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Close()
		s.watchLoop(ctx, w.Events, w.Errors)
	}()
	return func() { <-done }, nil
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
