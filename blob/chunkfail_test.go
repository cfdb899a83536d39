package blob

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingChunks is a MemStore whose Objects refuse to create the chunk
// objects whose key ends in failKey.
type failingChunks struct {
	*MemStore
	failKey string
}

var errChunkWrite = errors.New("chunk write failed")

func (s failingChunks) Objects() Objects { return failingObjects{s.MemStore.Objects(), s.failKey} }

type failingObjects struct {
	Objects
	failKey string
}

func (o failingObjects) CreateObject(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, o.failKey) {
		return errChunkWrite
	}
	return o.Objects.CreateObject(ctx, key, data)
}

// TestFailedChunkGivesBackOnlyItsBytes: a chunk whose write fails gives
// back the quota it held, and only that: the upload's earlier chunks
// stay held against the store's and the owner's quotas.
func TestFailedChunkGivesBackOnlyItsBytes(t *testing.T) {
	ctx := context.Background()
	mem := NewMemStore(MemOptions{MaxStoreBytes: 1000})
	s := failingChunks{MemStore: mem, failKey: chunkName(100)}
	u := NewUploads(s, UploadOptions{MaxChunkBytes: 100})
	alice := PutOptions{Owner: "alice", OwnerQuota: 500}
	id, err := u.Begin(ctx, "alice", "text/plain", 300)
	require.NoError(t, err)
	got, err := u.Chunk(ctx, id, alice, 0, bytes.Repeat([]byte("a"), 100))
	require.NoError(t, err)
	require.EqualValues(t, 100, got)
	_, err = u.Chunk(ctx, id, alice, 100, bytes.Repeat([]byte("a"), 60))
	require.ErrorIs(t, err, errChunkWrite)
	assert.EqualValues(t, 100, mem.PendingUsage(), "the first chunk is still held")

	// alice has 400 bytes left: a blob of 401 does not fit, 400 does.
	_, err = mem.Put(ctx, mem.NewID(), PutOptions{Kind: "text/plain", Owner: "alice", OwnerQuota: 500, Size: 401}, strings.NewReader(strings.Repeat("x", 401)))
	require.ErrorIs(t, err, ErrStorageFull)
	_, err = mem.Put(ctx, mem.NewID(), PutOptions{Kind: "text/plain", Owner: "alice", OwnerQuota: 500}, strings.NewReader(strings.Repeat("x", 400)))
	require.NoError(t, err)
}
