package blob

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSHeaderOfExactly512Bytes: a blob's metadata fills its file's
// 512-byte header exactly and is kept (and read back after a reopen); a
// byte more is refused and nothing is kept. The owner's name sets the
// length: the header is the magic line, the JSON metadata and a newline.
func TestFSHeaderOfExactly512Bytes(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dir := t.TempDir()
	s := openFS(t, dir, FSOptions{Now: func() time.Time { return created }})
	headerLen := func(id, owner string) int {
		meta, err := json.Marshal(map[string]any{"id": id, "kind": "text/plain", "size": 1,
			"sha256": strings.Repeat("0", 64), "created": created, "owner": owner})
		require.NoError(t, err)
		return len("SKILLGATE-BLOB 1\n") + len(meta) + len("\n")
	}
	id := s.NewID()
	owner := strings.Repeat("o", 512-headerLen(id, ""))
	require.Equal(t, 512, headerLen(id, owner))
	_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: owner}, strings.NewReader("x"))
	require.NoError(t, err, "a header of exactly 512 bytes")

	over := s.NewID()
	_, err = s.Put(ctx, over, PutOptions{Kind: "text/plain", Owner: owner + "o"}, strings.NewReader("x"))
	assert.ErrorIs(t, err, ErrInvalidKind, "a header of 513 bytes")
	_, err = s.Stat(ctx, over)
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s.Close())

	s = openFS(t, dir, FSOptions{})
	defer s.Close()
	info, err := s.Stat(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, owner, info.Owner)
	assert.Equal(t, "x", string(readAll(t, s, id)))
	_, file := s.path(id)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, byte('}'), data[510], "the JSON ends at byte 511")
	assert.Equal(t, byte('\n'), data[511])
	overShard, overFile := s.path(over)
	assert.NoFileExists(t, overFile)
	files, err := filepath.Glob(filepath.Join(overShard, tmpPrefix+"*"))
	require.NoError(t, err)
	assert.Empty(t, files, "no temp file left")
}

// TestFSObjectsDeleteRemovesEmptyFolders: deleting an object removes the
// folders it leaves empty, up to the space's root, and keeps a folder
// that still holds another key.
func TestFSObjectsDeleteRemovesEmptyFolders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFS(t, dir, FSOptions{})
	defer s.Close()
	o := s.Objects()
	kv := filepath.Join(dir, objectsKVDir)
	require.NoError(t, o.PutObject(ctx, "runs/a/b/record", strings.NewReader("x")))
	require.NoError(t, o.PutObject(ctx, "runs/c", strings.NewReader("y")))
	require.NoError(t, o.DeleteObject(ctx, "runs/a/b/record"))
	assert.NoDirExists(t, filepath.Join(kv, "runs", "a"))
	assert.FileExists(t, filepath.Join(kv, "runs", "c"), "runs holds another key")

	require.NoError(t, o.DeleteObject(ctx, "runs/c"))
	entries, err := os.ReadDir(kv)
	require.NoError(t, err, "the root stays")
	assert.Empty(t, entries)
	require.NoError(t, o.PutObject(ctx, "runs/d", strings.NewReader("z")))
}
