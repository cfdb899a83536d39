package blobtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
)

func (s *suite) testPutStatOpen(t *testing.T) {
	st, clock, _ := s.store(t, 1<<20, 0)
	data := []byte("hello, blob world")
	info := put(t, st, "alice", "Text/Plain; charset=UTF-8", data)
	assert.NoError(t, blob.ValidateID(info.ID))
	assert.Equal(t, "text/plain; charset=UTF-8", info.Kind)
	assert.Equal(t, int64(len(data)), info.Size)
	assert.Equal(t, Sum(data), info.SHA256)
	assert.Equal(t, "alice", info.Owner)
	assert.WithinDuration(t, clock.Now(), info.Created, time.Minute)

	got, err := st.Stat(context.Background(), info.ID)
	require.NoError(t, err)
	assert.Equal(t, info.ID, got.ID)
	assert.Equal(t, info.Kind, got.Kind)
	assert.Equal(t, info.SHA256, got.SHA256)
	assert.Equal(t, info.Owner, got.Owner)
	assert.Equal(t, info.Size, got.Size)
	assert.True(t, info.Created.Equal(got.Created), "created %v vs %v", info.Created, got.Created)
	assert.Equal(t, data, readAll(t, st, info.ID))

	b, err := st.Open(context.Background(), info.ID)
	require.NoError(t, err)
	defer b.Close()
	buf := make([]byte, 4)
	n, err := b.ReadAt(buf, 7)
	require.NoError(t, err)
	assert.Equal(t, "blob", string(buf[:n]))
	n, err = b.ReadAt(make([]byte, 10), int64(len(data))-3)
	assert.Equal(t, 3, n, "a read across the end returns what is there")
	assert.ErrorIs(t, err, io.EOF)
	n, err = b.ReadAt(make([]byte, 10), int64(len(data))+5)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	assert.NoError(t, b.Close())
	assert.NoError(t, b.Close(), "Close is idempotent")
}

func (s *suite) testEmpty(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	info := put(t, st, "alice", "application/octet-stream", nil)
	assert.Equal(t, int64(0), info.Size)
	assert.Equal(t, Sum(nil), info.SHA256)
	assert.Empty(t, readAll(t, st, info.ID))
}

func (s *suite) testBadIDs(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	ctx := context.Background()
	for _, id := range []string{"", "nope", "blob:", "blob:XYZ", "blob:" + strings.Repeat("a", 31),
		"blob:" + strings.Repeat("A", 32), "blob:../../" + strings.Repeat("a", 23), strings.Repeat("x", 5000)} {
		_, err := st.Put(ctx, id, blob.PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
		assert.ErrorIs(t, err, blob.ErrInvalidID, "put %q", id)
		_, err = st.Stat(ctx, id)
		assert.True(t, errors.Is(err, blob.ErrInvalidID) || errors.Is(err, blob.ErrNotFound), "stat %q: %v", id, err)
		_, err = st.Open(ctx, id)
		assert.True(t, errors.Is(err, blob.ErrInvalidID) || errors.Is(err, blob.ErrNotFound), "open %q: %v", id, err)
		assert.Less(t, len(err.Error()), 1000, "errors quote ids clipped")
	}
	unknown := st.NewID()
	_, err := st.Stat(ctx, unknown)
	assert.ErrorIs(t, err, blob.ErrNotFound)
	_, err = st.Open(ctx, unknown)
	assert.ErrorIs(t, err, blob.ErrNotFound)
	assert.ErrorIs(t, st.Remove(ctx, unknown), blob.ErrNotFound)
}

func (s *suite) testKinds(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	for _, kind := range []string{"", "text", "text/", "/plain", "text/pl ain", "text/plain; =x", strings.Repeat("a", 200) + "/b"} {
		id := st.NewID()
		_, err := st.Put(context.Background(), id, blob.PutOptions{Kind: kind}, strings.NewReader("x"))
		assert.ErrorIs(t, err, blob.ErrInvalidKind, "kind %q", kind)
		_, err = st.Stat(context.Background(), id)
		assert.ErrorIs(t, err, blob.ErrNotFound, "nothing kept for kind %q", kind)
	}
}

func (s *suite) testSizeLimit(t *testing.T) {
	st, _, _ := s.store(t, 1000, 0)
	put(t, st, "a", "application/octet-stream", make([]byte, 1000))
	id := st.NewID()
	_, err := st.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain"}, bytes.NewReader(make([]byte, 1001)))
	assert.ErrorIs(t, err, blob.ErrTooLarge)
	_, err = st.Stat(context.Background(), id)
	assert.ErrorIs(t, err, blob.ErrNotFound, "nothing of a refused blob is visible")
}

// failingReader fails after some bytes, as a dropped client does.
type failingReader struct{ n int }

var errBroken = errors.New("connection broken")

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errBroken
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func (s *suite) testAbortedPut(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	id := st.NewID()
	_, err := st.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain"}, &failingReader{n: 5000})
	assert.ErrorIs(t, err, errBroken)
	_, err = st.Stat(context.Background(), id)
	assert.ErrorIs(t, err, blob.ErrNotFound)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	id2 := st.NewID()
	_, err = st.Put(ctx, id2, blob.PutOptions{Kind: "text/plain"}, strings.NewReader("late"))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = st.Stat(context.Background(), id2)
	assert.ErrorIs(t, err, blob.ErrNotFound)

	// The id of a failed Put is free again.
	_, err = st.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain"}, strings.NewReader("again"))
	assert.NoError(t, err)
}

func (s *suite) testExpectedSum(t *testing.T) {
	for _, size := range []int{10, 3 << 20} { // one request, and multipart on S3
		st, _, _ := s.store(t, 4<<20, 0)
		data := bytes.Repeat([]byte("z"), size)
		id := st.NewID()
		_, err := st.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain", SHA256: Sum([]byte("other"))}, bytes.NewReader(data))
		assert.ErrorIs(t, err, blob.ErrChecksumMismatch)
		_, err = st.Stat(context.Background(), id)
		assert.ErrorIs(t, err, blob.ErrNotFound, "a mismatching blob is not kept")
		info, err := st.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain", SHA256: Sum(data)}, bytes.NewReader(data))
		require.NoError(t, err)
		assert.Equal(t, Sum(data), info.SHA256)
		assert.Equal(t, int64(size), info.Size)
		assert.Equal(t, data, readAll(t, st, id))
		_, err = st.Put(context.Background(), st.NewID(), blob.PutOptions{Kind: "text/plain", SHA256: Sum(data)},
			bytes.NewReader(make([]byte, 4<<20+1)))
		assert.ErrorIs(t, err, blob.ErrTooLarge, "the limit holds with a digest too")
	}
}

func (s *suite) testExists(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	info := put(t, st, "a", "text/plain", []byte("one"))
	_, err := st.Put(context.Background(), info.ID, blob.PutOptions{Kind: "text/plain"}, strings.NewReader("two"))
	assert.ErrorIs(t, err, blob.ErrExists)
	assert.Equal(t, []byte("one"), readAll(t, st, info.ID), "an existing blob is never replaced")
}

func (s *suite) testTTL(t *testing.T) {
	st, clock, _ := s.store(t, 1<<20, time.Hour)
	ctx := context.Background()
	held := put(t, st, "a", "text/plain", []byte("held"))
	free := put(t, st, "a", "text/plain", []byte("free"))
	b, err := st.Open(ctx, held.ID)
	require.NoError(t, err)

	n, err := st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "young blobs stay")

	clock.Advance(2 * time.Hour)
	n, err = st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the expired blob nobody holds goes")
	_, err = st.Stat(ctx, free.ID)
	assert.ErrorIs(t, err, blob.ErrNotFound)
	data := make([]byte, 4)
	_, err = b.ReadAt(data, 0)
	require.NoError(t, err, "a leased blob stays readable")
	assert.Equal(t, "held", string(data))

	require.NoError(t, b.Close())
	n, err = st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "once released, it goes")
	_, err = st.Open(ctx, held.ID)
	assert.ErrorIs(t, err, blob.ErrNotFound)
}

func (s *suite) testRemove(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	info := put(t, st, "a", "text/plain", []byte("bye"))
	require.NoError(t, st.Remove(context.Background(), info.ID))
	_, err := st.Stat(context.Background(), info.ID)
	assert.ErrorIs(t, err, blob.ErrNotFound)
	assert.ErrorIs(t, st.Remove(context.Background(), info.ID), blob.ErrNotFound)
}

func (s *suite) testOwners(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	ctx := context.Background()
	info := put(t, st, "alice", "text/plain", []byte("mine"))
	b, err := blob.OpenOwned(ctx, st, info.ID, "alice")
	require.NoError(t, err)
	require.NoError(t, b.Close())
	_, err = blob.OpenOwned(ctx, st, info.ID, "mallory")
	require.ErrorIs(t, err, blob.ErrNotFound)
	unknown := st.NewID()
	_, err2 := blob.OpenOwned(ctx, st, unknown, "mallory")
	assert.Equal(t, strings.ReplaceAll(err2.Error(), unknown, "ID"), strings.ReplaceAll(err.Error(), info.ID, "ID"),
		"another owner's blob reads like an unknown one")
	odd := put(t, st, "ünïcode name/with:stuff", "text/plain", []byte("x"))
	got, err := st.Stat(ctx, odd.ID)
	require.NoError(t, err)
	assert.Equal(t, "ünïcode name/with:stuff", got.Owner)
}

func (s *suite) testConcurrent(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
			info, err := st.Put(context.Background(), st.NewID(), blob.PutOptions{Kind: "text/plain", Owner: "o"}, bytes.NewReader(data))
			if err != nil {
				errs <- err
				return
			}
			b, err := st.Open(context.Background(), info.ID)
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			got, err := io.ReadAll(io.NewSectionReader(b, 0, info.Size))
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("content differs")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// patternReader yields n bytes of a pattern without holding them.
type patternReader struct{ off, n int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), r.n-r.off))
	for i := range k {
		p[i] = byte((r.off + int64(i)) * 7 % 251)
	}
	r.off += int64(k)
	return k, nil
}

func (s *suite) testLarge(t *testing.T) {
	const size = 20 << 20 // past one S3 multipart part
	st, _, _ := s.store(t, size, 0)
	info, err := st.Put(context.Background(), st.NewID(), blob.PutOptions{Kind: "application/octet-stream"}, &patternReader{n: size})
	require.NoError(t, err)
	want, err := io.ReadAll(&patternReader{n: size})
	require.NoError(t, err)
	assert.Equal(t, Sum(want), info.SHA256)
	b, err := st.Open(context.Background(), info.ID)
	require.NoError(t, err)
	defer b.Close()
	got := make([]byte, 1<<20)
	_, err = b.ReadAt(got, size-1<<20)
	require.NoError(t, err)
	assert.Equal(t, want[size-1<<20:], got, "a range read at the end")
}
