package blob

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUsageLeavesOutPendingUploads: a store's Usage counts its blobs'
// bytes, not the chunks unfinished uploads hold (PendingUsage does), in
// both stores.
func TestUsageLeavesOutPendingUploads(t *testing.T) {
	ctx := context.Background()
	for name, mk := range quotaStores(1000) {
		t.Run(name, func(t *testing.T) {
			s := mk(t, t.TempDir(), newFakeClock())
			defer s.Close()
			_, err := s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Owner: "alice"}, strings.NewReader(strings.Repeat("x", 10)))
			require.NoError(t, err)
			u := NewUploads(s, UploadOptions{MaxChunkBytes: 100})
			id, err := u.Begin(ctx, "alice", "text/plain", 300)
			require.NoError(t, err)
			_, err = u.Chunk(ctx, id, PutOptions{Owner: "alice"}, 0, bytes.Repeat([]byte("a"), 100))
			require.NoError(t, err)
			count, used := s.Usage()
			assert.Equal(t, 1, count)
			assert.EqualValues(t, 10, used)
			assert.EqualValues(t, 10, s.OwnerUsage("alice"))
			assert.EqualValues(t, 100, s.(holder).PendingUsage())
		})
	}
}

// TestFSStoreForgetsABlobWhoseFileIsGone: a blob whose file was removed
// behind the store's back is not found at its next Open, and its bytes
// leave the store's and its owner's usage.
func TestFSStoreForgetsABlobWhoseFileIsGone(t *testing.T) {
	ctx := context.Background()
	s := openFS(t, t.TempDir(), FSOptions{MaxStoreBytes: 100})
	defer s.Close()
	id := s.NewID()
	_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain", Owner: "alice"}, strings.NewReader(strings.Repeat("x", 60)))
	require.NoError(t, err)
	_, file := s.path(id)
	require.NoError(t, os.Remove(file))

	_, err = s.Open(ctx, id)
	require.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "file removed")
	count, used := s.Usage()
	assert.Zero(t, count)
	assert.Zero(t, used)
	assert.Zero(t, s.OwnerUsage("alice"))
	_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Size: 100}, strings.NewReader(strings.Repeat("x", 100)))
	assert.NoError(t, err, "the whole quota is free again")
}
