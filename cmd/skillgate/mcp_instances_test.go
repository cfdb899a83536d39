package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/metrics"
)

// TestMCPInstanceDirsUpToTheBound: processes sharing one --data-dir take
// the instance directories in turn, every one of the maxInstanceDirs;
// the next process is refused with the store's lock error.
func TestMCPInstanceDirsUpToTheBound(t *testing.T) {
	base, err := parseServe(t, "--data-dir", t.TempDir())
	require.NoError(t, err)
	open := func() (string, error) {
		cfg := *base
		store, err := openLocalBlobs(t.Context(), &cfg, zerolog.Nop(), metrics.New("test"))
		if err == nil {
			t.Cleanup(func() { _ = store.Close() })
		}
		return cfg.DataDir, err
	}
	dir, err := open()
	require.NoError(t, err)
	assert.Equal(t, base.DataDir, dir, "the first process takes --data-dir itself")
	for n := 1; n <= maxInstanceDirs; n++ {
		dir, err := open()
		require.NoError(t, err, "instance %d", n)
		assert.Equal(t, filepath.Join(base.DataDir, "instances", strconv.Itoa(n)), dir)
	}
	_, err = open()
	assert.ErrorIs(t, err, blob.ErrStoreLocked, "every instance directory is held")
}
