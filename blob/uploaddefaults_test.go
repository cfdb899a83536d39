package blob

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUploadDefaults: zero UploadOptions take the documented defaults:
// chunks of at most 2 MiB, uploads up to the store's MaxSize, 16
// unfinished uploads per owner, and removal an hour after the last
// chunk; options that are set are kept.
func TestUploadDefaults(t *testing.T) {
	ctx := context.Background()
	assert.EqualValues(t, 2<<20, NewUploads(NewMemStore(MemOptions{}), UploadOptions{}).MaxChunkBytes())
	assert.EqualValues(t, 100, NewUploads(NewMemStore(MemOptions{}), UploadOptions{MaxChunkBytes: 100}).MaxChunkBytes())

	s := NewMemStore(MemOptions{MaxBlobSize: 1000})
	u := NewUploads(s, UploadOptions{})
	_, err := u.Begin(ctx, "alice", "text/plain", 1000)
	require.NoError(t, err, "exactly the store's MaxSize")
	_, err = u.Begin(ctx, "alice", "text/plain", 1001)
	require.ErrorIs(t, err, ErrTooLarge)
	for range 15 {
		_, err = u.Begin(ctx, "alice", "text/plain", 0)
		require.NoError(t, err)
	}
	_, err = u.Begin(ctx, "alice", "text/plain", 0)
	var full *StorageFullError
	require.ErrorAs(t, err, &full, "the 17th unfinished upload")
	assert.Equal(t, FullPendingUploads, full.Reason)
	assert.EqualValues(t, 16, full.Limit)
	assert.EqualValues(t, 16, full.Used)

	u = NewUploads(s, UploadOptions{MaxSize: 10, MaxPending: 1})
	_, err = u.Begin(ctx, "bob", "text/plain", 11)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = u.Begin(ctx, "bob", "text/plain", 10)
	require.NoError(t, err)
	_, err = u.Begin(ctx, "bob", "text/plain", 10)
	require.ErrorAs(t, err, &full)
	assert.EqualValues(t, 1, full.Limit)

	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want time.Duration
	}{{"default", 0, time.Hour}, {"set", 10 * time.Minute, 10 * time.Minute}} {
		t.Run("ttl "+tc.name, func(t *testing.T) {
			clock := newFakeClock()
			s := NewMemStore(MemOptions{Now: clock.Now})
			u := NewUploads(s, UploadOptions{TTL: tc.ttl, Now: clock.Now})
			_, err := u.Begin(ctx, "alice", "text/plain", 10)
			require.NoError(t, err)
			clock.Advance(tc.want)
			n, err := u.Sweep(ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "kept for exactly the TTL")
			clock.Advance(time.Nanosecond)
			n, err = u.Sweep(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "removed a nanosecond later")
		})
	}
}

// TestSweepKeepsTheMarkerOfALiveUpload: an upload begun more than the TTL
// ago but given a chunk since is kept by a sweep, and so is its owner's
// marker: it still counts against MaxPending.
func TestSweepKeepsTheMarkerOfALiveUpload(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := NewMemStore(MemOptions{Now: clock.Now})
	u := NewUploads(s, UploadOptions{MaxPending: 1, MaxChunkBytes: 10, Now: clock.Now})
	id, err := u.Begin(ctx, "alice", "text/plain", 20)
	require.NoError(t, err)
	clock.Advance(50 * time.Minute)
	_, err = u.Chunk(ctx, id, PutOptions{Owner: "alice"}, 0, []byte("0123456789"))
	require.NoError(t, err)
	clock.Advance(20 * time.Minute)
	n, err := u.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = u.Begin(ctx, "alice", "text/plain", 1)
	var full *StorageFullError
	require.ErrorAs(t, err, &full, "the live upload still counts")
	assert.Equal(t, FullPendingUploads, full.Reason)
}
