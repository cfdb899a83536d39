package blob

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaStores are the stores that enforce quotas, with a store bound of
// storeBytes.
func quotaStores(storeBytes int64) map[string]func(t *testing.T, dir string, clock *fakeClock) Store {
	return map[string]func(t *testing.T, dir string, clock *fakeClock) Store{
		"mem": func(_ *testing.T, _ string, clock *fakeClock) Store {
			return NewMemStore(MemOptions{MaxStoreBytes: storeBytes, Now: clock.Now})
		},
		"fs": func(t *testing.T, dir string, clock *fakeClock) Store {
			return openFS(t, dir, FSOptions{MaxStoreBytes: storeBytes, Now: clock.Now})
		},
	}
}

// The chunks of unfinished uploads count against the owner's quota and
// the store's bound as they arrive: a chunk past either is refused with a
// full store, and a finished upload's blob takes over its chunks' bytes.
func TestUploadChunksCountAgainstQuotas(t *testing.T) {
	ctx := context.Background()
	for name, mk := range quotaStores(1000) {
		t.Run(name, func(t *testing.T) {
			// Real time: the filesystem dates the upload's files itself.
			clock := &fakeClock{now: time.Now()}
			s := mk(t, t.TempDir(), clock)
			defer s.Close()
			u := NewUploads(s, UploadOptions{MaxChunkBytes: 100, Now: clock.Now})
			alice := PutOptions{Owner: "alice", OwnerQuota: 250}

			// Two uploads of 200 bytes each, neither finished: the second
			// outgrows alice's 250 bytes at its second chunk.
			a, err := u.Begin(ctx, "alice", "text/plain", 200)
			require.NoError(t, err)
			b, err := u.Begin(ctx, "alice", "text/plain", 200)
			require.NoError(t, err)
			for off := int64(0); off < 200; off += 100 {
				_, err = u.Chunk(ctx, a, alice, off, bytes.Repeat([]byte("a"), 100))
				require.NoError(t, err)
			}
			_, err = u.Chunk(ctx, b, alice, 0, bytes.Repeat([]byte("b"), 40))
			require.NoError(t, err)
			_, err = u.Chunk(ctx, b, alice, 40, bytes.Repeat([]byte("b"), 100))
			var se *StorageFullError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, FullOwnerQuota, se.Reason)
			assert.Equal(t, int64(240), se.Used)
			assert.Equal(t, int64(240), se.Pending)
			assert.Contains(t, se.Error(), "this identity's blobs and unfinished uploads hold 240 of its 250 bytes (240 of them in unfinished uploads); this chunk needs 100 more")
			assert.Zero(t, s.OwnerUsage("alice"), "pending chunks are not blobs")

			// Another owner meets the store's bound of 1000 bytes.
			bob := PutOptions{Owner: "bob"}
			c, err := u.Begin(ctx, "bob", "text/plain", 1000)
			require.NoError(t, err)
			var off int64
			for ; err == nil; off += 100 {
				_, err = u.Chunk(ctx, c, bob, off, bytes.Repeat([]byte("c"), 100))
			}
			require.ErrorAs(t, err, &se)
			assert.Equal(t, FullStoreQuota, se.Reason)
			assert.Equal(t, int64(700), off-100, "bob got the chunks that fit what alice left of the store")
			assert.Equal(t, int64(940), se.Used)

			// Finishing alice's complete upload turns its hold into the
			// blob's bytes: nothing counts twice, and alice's quota is
			// as full as before.
			info, err := u.Finish(ctx, a, alice, sha(bytes.Repeat([]byte("a"), 200)))
			require.NoError(t, err)
			assert.Equal(t, int64(200), s.OwnerUsage("alice"))
			_, err = u.Chunk(ctx, b, alice, 40, bytes.Repeat([]byte("b"), 20))
			require.ErrorIs(t, err, ErrStorageFull, "200 of the blob and 40 pending leave 10 bytes")
			_, err = u.Chunk(ctx, b, alice, 40, bytes.Repeat([]byte("b"), 10))
			require.NoError(t, err)

			// Removing bob's upload frees the store for alice.
			clock.Advance(DefaultUploadTTL + time.Minute)
			require.NoError(t, s.Remove(ctx, info.ID))
			_, err = u.Sweep(ctx)
			require.NoError(t, err)
			_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Owner: "alice", OwnerQuota: 250}, bytes.NewReader(make([]byte, 250)))
			require.NoError(t, err, "swept uploads give their bytes back")
		})
	}
}

// A finish whose blob does not fit keeps the upload and its hold, and a
// mismatched digest gives the hold back with the upload.
func TestUploadHoldOnFailedFinish(t *testing.T) {
	ctx := context.Background()
	for name, mk := range quotaStores(0) {
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			s := mk(t, t.TempDir(), clock)
			defer s.Close()
			u := NewUploads(s, UploadOptions{MaxChunkBytes: 100, Now: clock.Now})
			alice := PutOptions{Owner: "alice", OwnerQuota: 100}
			id, err := u.Begin(ctx, "alice", "text/plain", 100)
			require.NoError(t, err)
			_, err = u.Chunk(ctx, id, alice, 0, make([]byte, 100))
			require.NoError(t, err)
			_, err = u.Finish(ctx, id, alice, sha([]byte("other")))
			require.ErrorIs(t, err, ErrChecksumMismatch)
			_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Owner: "alice", OwnerQuota: 100}, bytes.NewReader(make([]byte, 100)))
			require.NoError(t, err, "the refused upload's hold is given back")
		})
	}
}

// Concurrent chunks of one owner's uploads never hold more than its quota
// together.
func TestUploadChunksRaceQuota(t *testing.T) {
	ctx := context.Background()
	for name, mk := range quotaStores(0) {
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			s := mk(t, t.TempDir(), clock)
			defer s.Close()
			u := NewUploads(s, UploadOptions{MaxChunkBytes: 100, Now: clock.Now})
			alice := PutOptions{Owner: "alice", OwnerQuota: 350}
			const uploads = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			stored := 0
			for range uploads {
				id, err := u.Begin(ctx, "alice", "text/plain", 100)
				require.NoError(t, err)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := u.Chunk(ctx, id, alice, 0, make([]byte, 100)); err == nil {
						mu.Lock()
						stored++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			assert.Equal(t, 3, stored, "three chunks of 100 bytes fit 350 bytes")
			assert.Equal(t, int64(300), s.(holder).PendingUsage())
		})
	}
}

// A restart counts the chunks of the uploads it finds, so that they keep
// their place in the quotas.
func TestFSStoreRecountsPendingUploads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	s := openFS(t, dir, FSOptions{MaxStoreBytes: 300, Now: clock.Now})
	u := NewUploads(s, UploadOptions{MaxChunkBytes: 100, Now: clock.Now})
	id, err := u.Begin(ctx, "alice", "text/plain", 300)
	require.NoError(t, err)
	for off := int64(0); off < 200; off += 100 {
		_, err = u.Chunk(ctx, id, PutOptions{Owner: "alice"}, off, make([]byte, 100))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	s = openFS(t, dir, FSOptions{MaxStoreBytes: 300, Now: clock.Now})
	defer s.Close()
	assert.Equal(t, int64(200), s.PendingUsage())
	_, err = s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Owner: "bob"}, bytes.NewReader(make([]byte, 101)))
	require.ErrorIs(t, err, ErrStorageFull, "the reopened store still counts the pending 200 bytes")
	u = NewUploads(s, UploadOptions{MaxChunkBytes: 100, Now: clock.Now})
	_, err = u.Chunk(ctx, id, PutOptions{Owner: "alice"}, 200, make([]byte, 100))
	require.NoError(t, err)
	info, err := u.Finish(ctx, id, PutOptions{Owner: "alice"}, sha(make([]byte, 300)))
	require.NoError(t, err)
	_, used := s.Usage()
	assert.Equal(t, info.Size, used)
	assert.Zero(t, s.PendingUsage())
}
