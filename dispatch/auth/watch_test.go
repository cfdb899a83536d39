package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reloadLog records OnReload calls.
type reloadLog struct {
	mu   sync.Mutex
	errs []error
}

func (r *reloadLog) record(_ *Policy, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *reloadLog) failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.errs {
		if e != nil {
			n++
		}
	}
	return n
}

func authenticates(s *Store, token string) func() bool {
	return func() bool {
		_, err := s.AuthenticateToken(token)
		return err == nil
	}
}

func startWatch(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := s.Watch(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		wait()
	})
}

func TestWatchReloads(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	var log reloadLog
	s, err := Load(path, Options{Logger: testLogger(t), Debounce: 20 * time.Millisecond, OnReload: log.record})
	require.NoError(t, err)
	startWatch(t, s)
	without := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)

	// Rename over the file, as editors do.
	writeAtomic(t, path, without)
	require.Eventually(t, func() bool { return !authenticates(s, tokPOS)() }, 10*time.Second, 10*time.Millisecond)

	// A file that is no YAML fails closed: no identity can be vouched for.
	writeAtomic(t, path, "identities: [")
	require.Eventually(t, func() bool { return log.failures() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, authenticates(s, tokPOS2)())
	assert.False(t, authenticates(s, tokPOS)())

	// Written in place (truncate and write).
	require.NoError(t, os.WriteFile(path, []byte(expand(goodFile)), 0o600))
	require.Eventually(t, authenticates(s, tokPOS), 10*time.Second, 10*time.Millisecond)
}

// Kubernetes ConfigMap and Secret volumes publish a new version by
// swapping the "..data" symlink the file's symlink points through.
func TestWatchFollowsSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "..v1"), filepath.Join(dir, "..v2")
	require.NoError(t, os.Mkdir(v1, 0o700))
	require.NoError(t, os.Mkdir(v2, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(v1, "auth.yaml"), []byte(expand(goodFile)), 0o600))
	without := strings.Replace(expand(goodFile), "      - "+HashToken(tokPOS)+"\n", "", 1)
	require.NoError(t, os.WriteFile(filepath.Join(v2, "auth.yaml"), []byte(without), 0o600))
	require.NoError(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	path := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.Symlink("..data/auth.yaml", path))

	s, err := Load(path, Options{Logger: testLogger(t), Debounce: 20 * time.Millisecond})
	require.NoError(t, err)
	startWatch(t, s)
	require.True(t, authenticates(s, tokPOS)())

	require.NoError(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	require.Eventually(t, func() bool { return !authenticates(s, tokPOS)() }, 10*time.Second, 10*time.Millisecond)
}

func TestWatchMissingDirectory(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	s.path = filepath.Join(t.TempDir(), "gone", "auth.yaml")
	_, err = s.Watch(context.Background())
	require.Error(t, err)
}
