package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testlog"
)

// Without inotify (its instances used up: EMFILE) Watch still starts, says
// it polls and how often, and picks up a changed auth file by polling:
// written in place, renamed over, and swapped through a symlink.
func TestWatchFallsBackToPolling(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "v1.yaml")
	require.NoError(t, os.WriteFile(real, []byte(expand(goodFile)), 0o600))
	path := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.Symlink("v1.yaml", path))
	logs := &testlog.Buffer{}
	s, err := Load(path, Options{Logger: zerolog.New(logs)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	noInotify := func() (*fsnotify.Watcher, error) { return nil, syscall.EMFILE }
	wait, err := s.watch(ctx, noInotify, 20*time.Millisecond)
	require.NoError(t, err, "the gateway keeps serving without inotify")
	t.Cleanup(func() {
		cancel()
		wait()
	})
	assert.Contains(t, logs.String(), `"fallback":"polling","interval":20`)
	assert.Contains(t, logs.String(), "cannot watch the auth file with inotify; polling it instead")
	assert.Contains(t, logs.String(), "too many open files")

	without := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)
	require.NoError(t, os.WriteFile(real, []byte(without), 0o600))
	require.Eventually(t, func() bool { return !authenticates(s, tokPOS)() }, 10*time.Second, 10*time.Millisecond, "written in place")

	v2 := filepath.Join(dir, "v2.yaml")
	require.NoError(t, os.WriteFile(v2, []byte(expand(goodFile)), 0o600))
	require.NoError(t, os.Symlink("v2.yaml", path+".tmp"))
	require.NoError(t, os.Rename(path+".tmp", path))
	require.Eventually(t, authenticates(s, tokPOS), 10*time.Second, 10*time.Millisecond, "a swapped symlink")
}
