package blob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSStoreSweepReports: a sweep logs how many blobs it removed, and
// nothing when it removed none; a blob file it cannot remove (a folder
// holding a file stands in its place) fails the sweep, whose error is
// the first such failure, while the other expired blobs still go; a
// cancelled context fails an otherwise clean sweep.
func TestFSStoreSweepReports(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	var logs bytes.Buffer
	s := openFS(t, t.TempDir(), FSOptions{TTL: time.Hour, SweepInterval: time.Hour, Now: clock.Now,
		Logger: zerolog.New(&logs).Level(zerolog.DebugLevel)})
	defer s.Close()
	put := func() string {
		id := s.NewID()
		_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
		require.NoError(t, err)
		return id
	}

	put()
	logs.Reset()
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.NotContains(t, logs.String(), "expired blobs removed", "nothing removed, nothing logged")

	clock.Advance(time.Hour)
	put()
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Contains(t, logs.String(), `"removed":1,"message":"expired blobs removed"`)

	stuck := []string{put(), put()}
	for _, id := range stuck {
		_, file := s.path(id)
		require.NoError(t, os.Remove(file))
		require.NoError(t, os.MkdirAll(filepath.Join(file, "in-the-way"), 0o700))
	}
	put()
	clock.Advance(time.Hour)
	logs.Reset()
	n, err = s.Sweep(ctx)
	assert.Equal(t, 4, n, "the blobs are out of the index even when a file stays")
	require.Error(t, err)
	assert.ErrorContains(t, err, "sweep blobs: ")
	assert.ErrorContains(t, err, "directory not empty")
	assert.Contains(t, logs.String(), `"removed":4,"message":"expired blobs removed"`)
	count, _ := s.Usage()
	assert.Zero(t, count)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	n, err = s.Sweep(cancelled)
	assert.Zero(t, n)
	assert.ErrorIs(t, err, context.Canceled)
}
