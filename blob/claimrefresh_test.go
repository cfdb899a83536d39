package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowChunks is a MemStore whose chunk reads take 2 s: a finish that
// reads them holds its claim that long.
type slowChunks struct{ *MemStore }

func (s slowChunks) Objects() Objects { return slowObjects{s.MemStore.Objects()} }

type slowObjects struct{ Objects }

func (o slowObjects) GetObject(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if strings.Contains(key, "/"+chunkPrefix) {
		time.Sleep(2 * time.Second)
	}
	return o.Objects.GetObject(ctx, key)
}

// TestFinishKeepsItsClaimFresh: a finish that takes longer than
// ClaimTimeout (800 ms here, in virtual time) refreshes its claim, so
// that a finish on another replica never takes it over: that one gives
// up with ErrUploadFinishing, and the first makes the blob.
func TestFinishKeepsItsClaimFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := NewMemStore(MemOptions{})
		opts := UploadOptions{ClaimTimeout: 800 * time.Millisecond}
		slow, other := NewUploads(slowChunks{mem}, opts), NewUploads(mem, opts)
		alice := PutOptions{Owner: "alice"}
		id, err := slow.Begin(ctx, "alice", "text/plain", 1)
		require.NoError(t, err)
		_, err = slow.Chunk(ctx, id, alice, 0, []byte("x"))
		require.NoError(t, err)
		sum := sha256.Sum256([]byte("x"))

		done := make(chan error, 1)
		go func() {
			_, err := slow.Finish(ctx, id, alice, hex.EncodeToString(sum[:]))
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		_, err = other.Finish(ctx, id, alice, hex.EncodeToString(sum[:]))
		assert.ErrorIs(t, err, ErrUploadFinishing)
		require.NoError(t, <-done)
		count, _ := mem.Usage()
		assert.Equal(t, 1, count)
	})
}
