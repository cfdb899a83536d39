package blobtest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
)

const chunkBytes = 64 << 10

func uploads(st blob.Store, clock *Clock) *blob.Uploads {
	return blob.NewUploads(st, blob.UploadOptions{MaxSize: 1 << 30, MaxChunkBytes: chunkBytes, Now: clock.Now})
}

// upload sends data in chunks of chunkBytes through the upload sets, in
// turn (one per replica), and finishes it through the last.
func upload(t *testing.T, owner string, data []byte, ups ...*blob.Uploads) blob.Info {
	t.Helper()
	ctx := context.Background()
	id, err := ups[0].Begin(ctx, owner, "application/octet-stream", int64(len(data)))
	require.NoError(t, err)
	for off, i := 0, 0; off < len(data); off, i = off+chunkBytes, i+1 {
		end := min(off+chunkBytes, len(data))
		got, err := ups[i%len(ups)].Chunk(ctx, id, blob.PutOptions{Owner: owner}, int64(off), data[off:end])
		require.NoError(t, err)
		assert.Equal(t, int64(end), got)
	}
	info, err := ups[len(ups)-1].Finish(ctx, id, blob.PutOptions{Owner: owner}, Sum(data))
	require.NoError(t, err)
	return info
}

func (s *suite) testUploads(t *testing.T) {
	st, clock, _ := s.store(t, 1<<30, 0)
	up := uploads(st, clock)
	data := bytes.Repeat([]byte("upload!"), 50000) // 350000 bytes: 6 chunks
	info := upload(t, "alice", data, up)
	assert.Equal(t, Sum(data), info.SHA256)
	assert.Equal(t, "alice", info.Owner)
	assert.Equal(t, "application/octet-stream", info.Kind)
	assert.Equal(t, data, readAll(t, st, info.ID))
	left, err := st.Objects().ListObjects(context.Background(), "uploads/")
	require.NoError(t, err)
	assert.Empty(t, left, "a finished upload leaves no objects")

	empty := upload(t, "alice", nil, up)
	assert.Equal(t, int64(0), empty.Size)
}

func (s *suite) testUploadRefusals(t *testing.T) {
	st, clock, _ := s.store(t, 1<<20, 0)
	up := uploads(st, clock)
	ctx := context.Background()
	_, err := up.Begin(ctx, "alice", "text/plain", 2<<30)
	assert.ErrorIs(t, err, blob.ErrTooLarge)
	_, err = up.Begin(ctx, "alice", "not a kind", 10)
	assert.ErrorIs(t, err, blob.ErrInvalidKind)
	_, err = up.Begin(ctx, "alice", "text/plain", -1)
	assert.ErrorIs(t, err, blob.ErrTooLarge)

	id, err := up.Begin(ctx, "alice", "text/plain", 10)
	require.NoError(t, err)
	got, err := up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, []byte("01234"))
	require.NoError(t, err)
	assert.Equal(t, int64(5), got)

	got, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, []byte("01234"))
	require.NoError(t, err, "re-sending a chunk is accepted")
	assert.Equal(t, int64(5), got)
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, []byte("0123X"))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "an overlap with other bytes")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 2, []byte("234"))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "an overlap off a chunk boundary")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 7, []byte("789"))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "a hole")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 5, []byte("567890"))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "past the declared size")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 5, nil)
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "an empty chunk")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 5, make([]byte, chunkBytes+1))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "a chunk over the limit")
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "mallory"}, 5, []byte("56789"))
	assert.ErrorIs(t, err, blob.ErrUploadNotFound, "another identity's upload")
	_, err = up.Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum([]byte("0123456789")))
	assert.ErrorIs(t, err, blob.ErrInvalidUpload, "finish before all bytes arrived")

	for _, bad := range []string{"", "upload:", "upload:XYZ", "blob:" + strings.Repeat("a", 32), "upload:" + strings.Repeat("a", 32)} {
		_, err = up.Chunk(ctx, bad, blob.PutOptions{Owner: "alice"}, 0, []byte("x"))
		assert.ErrorIs(t, err, blob.ErrUploadNotFound, "id %q", bad)
	}

	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 5, []byte("56789"))
	require.NoError(t, err)
	_, err = up.Finish(ctx, id, blob.PutOptions{Owner: "alice"}, Sum([]byte("wrong")))
	assert.ErrorIs(t, err, blob.ErrChecksumMismatch)
	n, _ := st.Usage()
	left, lerr := st.Objects().ListObjects(ctx, "uploads/")
	require.NoError(t, lerr)
	assert.Empty(t, left, "a refused finish keeps nothing")
	if n != 0 {
		t.Errorf("a refused finish keeps no blob: usage says %d", n)
	}
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, []byte("01234"))
	assert.ErrorIs(t, err, blob.ErrUploadNotFound)
}

func (s *suite) testUploadSweep(t *testing.T) {
	st, clock, _ := s.store(t, 1<<20, 0)
	up := uploads(st, clock)
	ctx := context.Background()
	id, err := up.Begin(ctx, "alice", "text/plain", 10)
	require.NoError(t, err)
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 0, []byte("01234"))
	require.NoError(t, err)
	n, err := up.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an active upload stays")
	clock.Advance(blob.DefaultUploadTTL + 10*time.Minute)
	n, err = up.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = up.Chunk(ctx, id, blob.PutOptions{Owner: "alice"}, 5, []byte("56789"))
	assert.ErrorIs(t, err, blob.ErrUploadNotFound, "an expired upload is gone")
}

func (s *suite) testReplicas(t *testing.T) {
	clock := NewClock()
	ns := s.ns()
	cfg := Config{MaxSize: 1 << 30, Now: clock.Now}
	a, b := s.open(t, ns, cfg), s.open(t, ns, cfg)
	info := put(t, a, "alice", "text/plain", []byte("from a"))
	assert.Equal(t, []byte("from a"), readAll(t, b, info.ID), "a blob written on one replica reads on another")
	got, err := b.Stat(context.Background(), info.ID)
	require.NoError(t, err)
	assert.Equal(t, "alice", got.Owner)

	data := bytes.Repeat([]byte("replica"), 30000)
	up := upload(t, "alice", data, uploads(a, clock), uploads(b, clock))
	assert.Equal(t, data, readAll(t, a, up.ID), "an upload begun on one replica is finished on another")

	require.NoError(t, a.Objects().PutObject(context.Background(), "runs/x", strings.NewReader("shared")))
	assert.Equal(t, "shared", getObject(t, b.Objects(), "runs/x"))
}
