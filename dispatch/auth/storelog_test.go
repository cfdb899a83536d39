package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The debounce defaults to 250 ms when not set or not positive; the
// watcher logs the one it uses.
func TestWatchDebounceDefault(t *testing.T) {
	for _, tc := range []struct {
		set  time.Duration
		want string
	}{{0, `"debounce":250`}, {-time.Second, `"debounce":250`}, {time.Millisecond, `"debounce":1`}, {20 * time.Millisecond, `"debounce":20`}} {
		var logs testlog.Buffer
		path := tempFile(t, expand(goodFile))
		s, err := Load(path, Options{Logger: zerolog.New(&logs), Debounce: tc.set})
		require.NoError(t, err)
		assert.Equal(t, path, s.Path())
		ctx, cancel := context.WithCancel(context.Background())
		wait, err := s.Watch(ctx)
		require.NoError(t, err)
		cancel()
		wait()
		assert.Contains(t, logs.String(), tc.want, "debounce set to %v", tc.set)
	}
}

// What is valid but probably not meant is logged at load, one line each.
func TestLoadLogsWarnings(t *testing.T) {
	var logs testlog.Buffer
	_, err := Load(tempFile(t, "identities:\n  - name: a\n    class: agent\n    methods: []\n    namespaces: []\n"),
		Options{Logger: zerolog.New(&logs)})
	require.NoError(t, err)
	out := logs.String()
	assert.Contains(t, out, `"level":"warn"`)
	assert.Contains(t, out, `"problem":"2:5: identities[0]: no tokens or certificates`)
	assert.Contains(t, out, `"identities":1`)
}

// A watch error (an overflowed event queue loses events) reloads the file
// after the debounce, as an event does; closed channels end the loop.
func TestWatchErrorReloads(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	var log reloadLog
	s, err := Load(path, Options{Logger: testLogger(t), Debounce: time.Millisecond, OnReload: log.record})
	require.NoError(t, err)
	writeAtomic(t, path, strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1))

	events, errs := make(chan fsnotify.Event), make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watchLoop(context.Background(), events, errs)
	}()
	errs <- fsnotify.ErrEventOverflow
	require.Eventually(t, func() bool { return !authenticates(s, tokPOS)() }, 30*time.Second, 5*time.Millisecond)
	close(errs)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end when its error channel closed")
	}

	done = make(chan struct{})
	go func() {
		defer close(done)
		s.watchLoop(context.Background(), events, make(chan error))
	}()
	close(events)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end when its event channel closed")
	}
	assert.Zero(t, log.failures())
}
