package s3blob_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/internal/scaleouttest"
	"github.com/skillgate/skillgate/internal/testlog"
)

// A ranged read asks S3 for exactly the bytes it returns, and the ends of
// a blob read as the io.ReaderAt contract says: at the size, EOF; an
// empty buffer inside the blob, nothing and no error.
func TestS3RangeReadBounds(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	proxy := newRecordingProxy(t, m)
	clock := blobtest.NewClock()
	opts := testOptions(m, "ranges", "r", clock)
	opts.Endpoint = proxy.URL
	st := open(t, opts)
	ctx := ctxTimeout(t)
	info, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("0123456789"))
	require.NoError(t, err)
	b, err := st.Open(ctx, info.ID)
	require.NoError(t, err)
	defer b.Close()
	proxy.takeRanges()

	buf := make([]byte, 4)
	n, err := b.ReadAt(buf, 3)
	require.NoError(t, err)
	assert.Equal(t, "3456", string(buf[:n]))
	assert.Equal(t, []string{"bytes=3-6"}, proxy.takeRanges(), "four bytes at 3 are bytes 3 to 6")

	n, err = b.ReadAt(buf, 6)
	require.NoError(t, err, "a read that ends exactly at the end is whole")
	assert.Equal(t, "6789", string(buf[:n]))
	assert.Equal(t, []string{"bytes=6-9"}, proxy.takeRanges())

	n, err = b.ReadAt(make([]byte, 10), 8)
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []string{"bytes=8-9"}, proxy.takeRanges(), "a read across the end asks only for what is there")

	n, err = b.ReadAt(buf, 10)
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err, "a read at the size is at the end")
	n, err = b.ReadAt(nil, 10)
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err)
	n, err = b.ReadAt(nil, 4)
	assert.Equal(t, 0, n)
	assert.NoError(t, err, "an empty read inside the blob")
	_, err = b.ReadAt(buf, -1)
	assert.Error(t, err)
	assert.Empty(t, proxy.takeRanges(), "none of these asks S3 anything")
}

// A blob opened twice stays leased until both are closed: closing one
// handle does not expose it to the sweep.
func TestS3LeaseCountsHandles(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	clock := blobtest.NewClock()
	opts := testOptions(m, "leases", "l", clock)
	opts.TTL = time.Hour
	st := open(t, opts)
	ctx := ctxTimeout(t)
	info, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("held twice"))
	require.NoError(t, err)
	b1, err := st.Open(ctx, info.ID)
	require.NoError(t, err)
	b2, err := st.Open(ctx, info.ID)
	require.NoError(t, err)
	require.NoError(t, b1.Close())
	require.NoError(t, b1.Close(), "a second Close of one handle releases nothing more")

	clock.Advance(2 * time.Hour)
	n, err := st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the other handle still holds it")
	got := make([]byte, 4)
	_, err = b2.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, "held", string(got))

	require.NoError(t, b2.Close())
	n, err = st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "released by both, it goes")
	_, err = st.Stat(ctx, info.ID)
	assert.ErrorIs(t, err, blob.ErrNotFound)
}

// Usage counts this store's puts and removes, and a sweep recounts it from
// the bucket, blobs written by other replicas included.
func TestS3Usage(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	clock := blobtest.NewClock()
	st := open(t, testOptions(m, "usage", "u", clock))
	ctx := ctxTimeout(t)
	count, size := st.Usage()
	assert.Equal(t, 0, count)
	assert.Equal(t, int64(0), size)
	a, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("abc"))
	require.NoError(t, err)
	_, err = st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain", SHA256: blobtest.Sum([]byte("defgh"))}, strings.NewReader("defgh"))
	require.NoError(t, err)
	count, size = st.Usage()
	assert.Equal(t, 2, count)
	assert.Equal(t, int64(8), size)

	require.NoError(t, st.Remove(ctx, a.ID))
	count, size = st.Usage()
	assert.Equal(t, 1, count)
	assert.Equal(t, int64(5), size)

	other := open(t, testOptions(m, "usage", "u", clock))
	_, err = other.Put(ctx, other.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("0123456"))
	require.NoError(t, err)
	n, err := st.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	count, size = st.Usage()
	assert.Equal(t, 2, count, "the sweep counts the other replica's blob")
	assert.Equal(t, int64(12), size)
}

// Without a TTL a sweep removes no blob, however late it is; with one,
// each sweep that removes something says so in the debug log, and one
// that removes nothing says nothing.
func TestS3SweepTTL(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	ctx := ctxTimeout(t)

	t.Run("none", func(t *testing.T) {
		clock := blobtest.NewClock()
		st := open(t, testOptions(m, "ttl", "none", clock))
		info, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("kept"))
		require.NoError(t, err)
		clock.Advance(100 * 24 * time.Hour)
		n, err := st.Sweep(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		_, err = st.Stat(ctx, info.ID)
		assert.NoError(t, err, "a store without a TTL keeps its blobs")
	})

	t.Run("log", func(t *testing.T) {
		clock := blobtest.NewClock()
		var logs testlog.Buffer
		opts := testOptions(m, "ttl", "log", clock)
		opts.TTL, opts.Logger = time.Hour, zerolog.New(&logs).Level(zerolog.DebugLevel)
		st := open(t, opts)
		assert.NotContains(t, logs.String(), "blob sweep at open", "the sweep at open succeeded")
		_, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("expires"))
		require.NoError(t, err)
		n, err := st.Sweep(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.NotContains(t, logs.String(), "expired blobs removed", "nothing removed, nothing said")

		clock.Advance(2 * time.Hour)
		n, err = st.Sweep(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Contains(t, logs.String(), `"removed":1,"message":"expired blobs removed"`)
		assert.NotContains(t, logs.String(), `"level":"warn"`)
	})
}

// Staging objects (a Put's content before its copy into place) go once
// older than StagingTTL: 24 hours by default, or as set.
func TestS3StagingTTL(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw := rawClient(t, m)
	ctx := ctxTimeout(t)
	stage := func(prefix string) string {
		t.Helper()
		key := prefix + "/tmp/" + strings.Repeat("ab", 16) + "-" + hex.EncodeToString([]byte("stagekey"))
		_, err := raw.PutObject(ctx, "staging", key, bytes.NewReader([]byte("half a put")), 10, minio.PutObjectOptions{})
		require.NoError(t, err)
		return key
	}

	t.Run("default", func(t *testing.T) {
		clock := blobtest.NewClock()
		st := open(t, testOptions(m, "staging", "default", clock))
		key := stage("default")
		age := time.Duration(0)
		for _, step := range []time.Duration{0, time.Hour, 22 * time.Hour} { // now, +1h, +23h
			clock.Advance(step)
			age += step
			_, err := st.Sweep(ctx)
			require.NoError(t, err)
			require.True(t, objectExists(t, raw, "staging", key), "kept at +%v", age)
		}
		clock.Advance(2 * time.Hour) // +25h
		_, err := st.Sweep(ctx)
		require.NoError(t, err)
		assert.False(t, objectExists(t, raw, "staging", key), "older than a day, it goes")
	})

	t.Run("set", func(t *testing.T) {
		clock := blobtest.NewClock()
		opts := testOptions(m, "staging", "set", clock)
		opts.StagingTTL = time.Hour
		st := open(t, opts)
		key := stage("set")
		clock.Advance(30 * time.Minute)
		_, err := st.Sweep(ctx)
		require.NoError(t, err)
		require.True(t, objectExists(t, raw, "staging", key))
		clock.Advance(time.Hour)
		_, err = st.Sweep(ctx)
		require.NoError(t, err)
		assert.False(t, objectExists(t, raw, "staging", key), "older than StagingTTL, it goes")
	})
}

// Content up to 1 MiB goes up in one PUT; more goes up as a multipart
// upload in parts of PartSize (16 MiB unless set). S3 shows which in the
// ETag: a multipart object's ends in -<parts>.
func TestS3PartSizes(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw := rawClient(t, m)
	ctx := ctxTimeout(t)
	etag := func(key string) string {
		t.Helper()
		oi, err := raw.StatObject(ctx, "parts", key, minio.StatObjectOptions{})
		require.NoError(t, err)
		return oi.ETag
	}
	parts := func(tag string) string {
		if i := strings.LastIndexByte(tag, '-'); i >= 0 {
			return tag[i+1:]
		}
		return "single PUT"
	}

	clock := blobtest.NewClock()
	st := open(t, testOptions(m, "parts", "default", clock))
	obj := st.Objects()
	require.NoError(t, obj.PutObject(ctx, "small", bytes.NewReader(make([]byte, 1<<20))))
	assert.Equal(t, "single PUT", parts(etag("default/kv/small")), "1 MiB is one request")
	require.NoError(t, obj.PutObject(ctx, "over", bytes.NewReader(make([]byte, 1<<20+1))))
	assert.Equal(t, "1", parts(etag("default/kv/over")), "a byte more is a multipart upload")

	data := bytes.Repeat([]byte("p"), 16<<20+1)
	info, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain", SHA256: blobtest.Sum(data)}, bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, "2", parts(etag("default/blobs/"+strings.TrimPrefix(info.ID, "blob:"))), "16 MiB parts by default")

	opts := testOptions(m, "parts", "set", clock)
	opts.PartSize = 5 << 20
	small := open(t, opts)
	data = data[:11<<20]
	info, err = small.Put(ctx, small.NewID(), blob.PutOptions{Kind: "text/plain", SHA256: blobtest.Sum(data)}, bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, "3", parts(etag("set/blobs/"+strings.TrimPrefix(info.ID, "blob:"))), "5 MiB parts as set")
	got, err := small.Open(ctx, info.ID)
	require.NoError(t, err)
	defer got.Close()
	all, err := io.ReadAll(io.NewSectionReader(got, 0, info.Size))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, all), "the parts make the content")
}
