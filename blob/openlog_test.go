package blob

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSStoreOpenLogCountsRemovals: the "blob store opened" line counts
// what the open removed: a blob file's temp file, an unreadable blob file
// and an object's temp file (3), not a file that is not the store's; and
// it counts the blobs and bytes left.
func TestFSStoreOpenLogCountsRemovals(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openFS(t, dir, FSOptions{})
	ids := []string{s.NewID(), s.NewID(), s.NewID()}
	for _, id := range ids {
		_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader(strings.Repeat("x", 100)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Objects().PutObject(ctx, "runs/r1/record", strings.NewReader("kept")))
	require.NoError(t, s.Close())

	shard, f0 := s.path(ids[0])
	require.NoError(t, os.WriteFile(f0, []byte("garbage"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(shard, tmpPrefix+filepath.Base(f0)+"-1"), []byte("half"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(shard, "README"), []byte("not the store's"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, objectsKVDir, "runs", "r1", tmpPrefix+"2"), []byte("half"), 0o600))

	var logs bytes.Buffer
	s = openFS(t, dir, FSOptions{Logger: zerolog.New(&logs)})
	defer s.Close()
	var opened struct {
		Blobs          int   `json:"blobs"`
		Bytes          int64 `json:"bytes"`
		RemovedPartial int   `json:"removed_partial"`
	}
	var unreadable int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch m["message"] {
		case "blob store opened":
			require.NoError(t, json.Unmarshal([]byte(line), &opened))
		case "removing unreadable blob file":
			unreadable++
		}
	}
	assert.Equal(t, 3, opened.RemovedPartial)
	assert.Equal(t, 2, opened.Blobs)
	assert.EqualValues(t, 200, opened.Bytes)
	assert.Equal(t, 1, unreadable)
	assert.FileExists(t, filepath.Join(shard, "README"))
}
