package blobtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
)

// racers is how many calls the race tests start at once: a handful, as
// many clients retrying one call would.
const racers = 6

// race runs fn(i) for i < racers at once, each in its own goroutine, and
// returns their errors by i once all have returned.
func race(fn func(i int) error) []error {
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// replicaUploads returns the upload sets the race tests send through: one
// shared by every caller (calls of one process), or one per caller (as
// many replicas), all over the store st.
func replicaUploads(st blob.Store, clock *Clock, shared bool) []*blob.Uploads {
	out := make([]*blob.Uploads, racers)
	for i := range out {
		if i == 0 || !shared {
			out[i] = uploads(st, clock)
		} else {
			out[i] = out[0]
		}
	}
	return out
}

func modes(t *testing.T, fn func(t *testing.T, shared bool)) {
	t.Run("one process", func(t *testing.T) { fn(t, true) })
	t.Run("replicas", func(t *testing.T) { fn(t, false) })
}

// testUploadFinishOnce: concurrent finish_upload calls of one upload make
// one blob; the others are told the upload is being finished or gone.
func (s *suite) testUploadFinishOnce(t *testing.T) {
	modes(t, func(t *testing.T, shared bool) {
		st, clock, _ := s.store(t, 1<<30, 0)
		ups := replicaUploads(st, clock, shared)
		ctx := context.Background()
		data := bytes.Repeat([]byte("finish once "), 20000)
		id, err := ups[0].Begin(ctx, "alice", "text/plain", int64(len(data)))
		require.NoError(t, err)
		for off := 0; off < len(data); off += chunkBytes {
			_, err := ups[0].Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, int64(off), data[off:min(off+chunkBytes, len(data))])
			require.NoError(t, err)
		}
		infos := make([]blob.Info, racers)
		errs := race(func(i int) error {
			var err error
			infos[i], err = ups[i].Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum(data))
			return err
		})
		var made []string
		for i, err := range errs {
			if err == nil {
				made = append(made, infos[i].ID)
				continue
			}
			if !errors.Is(err, blob.ErrUploadFinishing) && !errors.Is(err, blob.ErrUploadNotFound) {
				t.Errorf("finish %d: want the upload finishing or gone, got %v", i, err)
			}
		}
		require.Len(t, made, 1, "exactly one of %d concurrent finishes makes a blob: %v", racers, errs)
		assert.Equal(t, data, readAll(t, st, made[0]))
		count, _ := st.Usage()
		assert.Equal(t, 1, count, "no other blob was stored")
		left, err := st.Objects().ListObjects(ctx, "uploads/")
		require.NoError(t, err)
		assert.Empty(t, left, "the finished upload leaves no objects")
		_, err = ups[0].Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum(data))
		assert.ErrorIs(t, err, blob.ErrUploadNotFound, "a finish after the blob was made")
	})
}

// testUploadChunkRace: chunks sent at one offset at once are taken one
// at a time: one is stored, an identical one is accepted as a resend, and
// different bytes are refused, so the upload ends with one version.
func (s *suite) testUploadChunkRace(t *testing.T) {
	modes(t, func(t *testing.T, shared bool) {
		st, clock, _ := s.store(t, 1<<30, 0)
		ups := replicaUploads(st, clock, shared)
		ctx := context.Background()
		const size = 8
		id, err := ups[0].Begin(ctx, "alice", "text/plain", size)
		require.NoError(t, err)
		// Callers 0 and 1 send the same bytes, the others their own, of
		// differing lengths.
		chunk := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + max(i, 1))}, 2+max(i, 1)) }
		got := make([]int64, racers)
		errs := race(func(i int) error {
			var err error
			got[i], err = ups[i].Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, chunk(i))
			return err
		})
		var won []int
		for i, err := range errs {
			switch {
			case err == nil:
				won = append(won, i)
			case !errors.Is(err, blob.ErrInvalidUpload):
				t.Errorf("chunk %d: %v", i, err)
			}
		}
		require.NotEmpty(t, won, "%v", errs)
		first := chunk(won[0])
		for _, i := range won {
			require.Equal(t, first, chunk(i), "only one version of the bytes at offset 0 is accepted: %v", errs)
			assert.Equal(t, int64(len(first)), got[i])
		}
		rest := bytes.Repeat([]byte("z"), size-len(first))
		n, err := ups[0].Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, int64(len(first)), rest)
		require.NoError(t, err)
		assert.Equal(t, int64(size), n)
		want := append(append([]byte{}, first...), rest...)
		info, err := ups[0].Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum(want))
		require.NoError(t, err)
		assert.Equal(t, want, readAll(t, st, info.ID))
	})
}

// testPendingUploadsCap: an owner may have MaxPending unfinished uploads;
// past that Begin answers a full store, also when the begins race, and
// finished or expired uploads free their places.
func (s *suite) testPendingUploadsCap(t *testing.T) {
	const limit = 3
	st, clock, _ := s.store(t, 1<<20, 0)
	ctx := context.Background()
	newUps := func() *blob.Uploads {
		return blob.NewUploads(st, blob.UploadOptions{MaxChunkBytes: chunkBytes, MaxPending: limit, Now: clock.Now})
	}
	ups := make([]*blob.Uploads, racers)
	for i := range ups {
		ups[i] = newUps()
	}
	ids := make([]string, racers)
	errs := race(func(i int) error {
		var err error
		ids[i], err = ups[i].Begin(ctx, "alice", "text/plain", 1)
		return err
	})
	var begun []string
	for i, err := range errs {
		if err == nil {
			begun = append(begun, ids[i])
			continue
		}
		var se *blob.StorageFullError
		if assert.ErrorAs(t, err, &se, "begin %d", i) {
			assert.Equal(t, blob.FullPendingUploads, se.Reason)
			assert.Contains(t, se.Error(), "the most it may have at once")
		}
	}
	// Replicas racing may all refuse (each counts the others' markers),
	// which a retry mends; what must hold is that none passes the cap.
	require.LessOrEqual(t, len(begun), limit, "racing begins never pass the cap: %v", errs)
	for len(begun) < limit {
		id, err := ups[0].Begin(ctx, "alice", "text/plain", 1)
		require.NoError(t, err, "the cap is not reached yet")
		begun = append(begun, id)
	}
	_, err := ups[0].Begin(ctx, "alice", "text/plain", 1)
	require.ErrorIs(t, err, blob.ErrStorageFull, "a fourth upload")
	_, err = ups[0].Begin(ctx, "bob", "text/plain", 1)
	require.NoError(t, err, "another owner has places of its own")

	_, err = ups[0].Chunk(ctx, begun[0], blob.PutOptions{Owner: "alice"}, 0, []byte("x"))
	require.NoError(t, err)
	_, err = ups[0].Finish(ctx, begun[0], blob.PutOptions{Owner: "alice"}, Sum([]byte("x")))
	require.NoError(t, err)
	_, err = ups[0].Begin(ctx, "alice", "text/plain", 1)
	require.NoError(t, err, "a finished upload frees its place")
	_, err = ups[0].Begin(ctx, "alice", "text/plain", 1)
	require.ErrorIs(t, err, blob.ErrStorageFull)

	clock.Advance(blob.DefaultUploadTTL + time.Minute)
	_, err = ups[0].Sweep(ctx)
	require.NoError(t, err)
	_, err = ups[0].Begin(ctx, "alice", "text/plain", 1)
	require.NoError(t, err, "expired uploads free their places")
	left, err := st.Objects().ListObjects(ctx, "upload-owners/")
	require.NoError(t, err)
	assert.Len(t, left, 1, "the sweep removed the markers of expired uploads")
}

// testUploadClaimTakeover: a claim its holder stopped refreshing (a
// gateway that died mid-finish) is taken over once ClaimTimeout old, and
// a fresh one is waited for, then answered with ErrUploadFinishing.
func (s *suite) testUploadClaimTakeover(t *testing.T) {
	st, clock, _ := s.store(t, 1<<20, 0)
	ctx := context.Background()
	// Two seconds: S3 dates objects to the second.
	up := blob.NewUploads(st, blob.UploadOptions{MaxChunkBytes: chunkBytes, ClaimTimeout: 2 * time.Second, Now: clock.Now})
	data := []byte("claimed by a finish that died")
	id, err := up.Begin(ctx, "alice", "text/plain", int64(len(data)))
	require.NoError(t, err)
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, data)
	require.NoError(t, err)
	require.NoError(t, st.Objects().CreateObject(ctx, "uploads/"+strings.TrimPrefix(id, "upload:")+"/finish", nil))

	_, err = up.Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum(data))
	require.ErrorIs(t, err, blob.ErrUploadFinishing, "a claim refreshed within the timeout is another finish at work")
	clock.Advance(time.Minute)
	info, err := up.Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum(data))
	require.NoError(t, err, "a claim left alone for the timeout is taken over")
	assert.Equal(t, data, readAll(t, st, info.ID))
	count, _ := st.Usage()
	assert.Equal(t, 1, count)
}
