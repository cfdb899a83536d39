package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
	"github.com/skillgate/skillgate/internal/testlog"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ raw, bucket, prefix string }{
		{"s3://bucket", "bucket", ""},
		{"s3://bucket/", "bucket", ""},
		{"s3://bucket/gw", "bucket", "gw"},
		{"s3://bucket/gw/prod/", "bucket", "gw/prod"},
	} {
		bucket, prefix, err := s3blob.ParseURL(c.raw)
		require.NoError(t, err, c.raw)
		assert.Equal(t, c.bucket, bucket, c.raw)
		assert.Equal(t, c.prefix, prefix, c.raw)
	}
	for _, raw := range []string{"", "bucket", "s3:bucket", "https://bucket/p", "s3://", "s3:///p", "s3://bucket?x=1",
		"s3://bucket/p#frag", "s3://user@bucket", "s3://user:pw@bucket/p", "s3://bu\x00cket", "%zz"} {
		_, _, err := s3blob.ParseURL(raw)
		assert.ErrorIs(t, err, s3blob.ErrBadURL, "%q", raw)
	}
	for _, raw := range []string{"s3://bucket/../p", "s3://bucket/a//b", "s3://bucket/.hidden", "s3://bucket/a b"} {
		_, _, err := s3blob.ParseURL(raw)
		assert.ErrorIs(t, err, blob.ErrInvalidKey, "%q: the prefix is no valid key", raw)
	}
}

// The endpoint is host:port (TLS), or an http:// or https:// URL without
// a path. Against MinIO, which speaks plain HTTP, only http:// gets an
// answer: the others fail in the TLS handshake, which shows they used
// TLS.
func TestS3Endpoint(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	host := strings.TrimPrefix(m.Endpoint, "http://")
	for _, e := range []string{"ftp://" + host, "http://" + host + "/base", "https://", "http://%zz"} {
		_, err := s3blob.Open(ctxTimeout(t), s3blob.Options{Bucket: "endpoint", Endpoint: e, PathStyle: true, CreateBucket: true, SweepInterval: -1})
		require.Error(t, err, e)
		assert.Contains(t, err.Error(), "s3 endpoint", e)
	}
	for _, e := range []string{"https://" + host, "https://" + host + "/", host} {
		_, err := s3blob.Open(ctxTimeout(t), s3blob.Options{Bucket: "endpoint", Endpoint: e, Region: "us-east-1", PathStyle: true,
			CreateBucket: true, SweepInterval: -1})
		require.Error(t, err, e)
		assert.NotContains(t, err.Error(), "s3 endpoint", e)
		assert.Contains(t, err.Error(), "HTTP response to HTTPS client", e)
	}
	st, err := s3blob.Open(ctxTimeout(t), s3blob.Options{Bucket: "endpoint", Endpoint: m.Endpoint + "/", Region: "us-east-1",
		PathStyle: true, CreateBucket: true, SweepInterval: -1})
	require.NoError(t, err, "a trailing slash is no path")
	require.NoError(t, st.Close())
}

// A store whose bucket was deleted under it fails every write, with
// nothing claimed written; reads find nothing.
func TestS3BucketGone(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw := rawClient(t, m)
	clock := blobtest.NewClock()
	st := open(t, testOptions(m, "gone", "g", clock))
	ctx := ctxTimeout(t)
	require.NoError(t, raw.RemoveBucket(ctx, "gone"))

	err := st.Objects().PutObject(ctx, "k", strings.NewReader("v"))
	require.Error(t, err)
	var resp minio.ErrorResponse
	require.ErrorAs(t, err, &resp)
	assert.Equal(t, "NoSuchBucket", resp.Code, "%v", err)
	assert.Contains(t, err.Error(), "s3 put")
	big := bytes.Repeat([]byte("b"), 1<<20+1)
	assert.Error(t, st.Objects().PutObject(ctx, "big", bytes.NewReader(big)))
	for _, digest := range []string{"", blobtest.Sum(big)} {
		id := st.NewID()
		_, err = st.Put(ctx, id, blob.PutOptions{Kind: "text/plain", SHA256: digest}, bytes.NewReader(big))
		assert.Error(t, err, "digest %q", digest)
		_, err = st.Stat(ctx, id)
		assert.ErrorIs(t, err, blob.ErrNotFound)
	}
	_, _, err = st.Objects().GetObject(ctx, "k")
	assert.ErrorIs(t, err, blob.ErrObjectNotFound)
	_, err = st.Sweep(ctx)
	assert.Error(t, err)
	count, _ := st.Usage()
	assert.Zero(t, count, "no failed put counts")

	_, err = s3blob.Open(ctx, s3blob.Options{Bucket: "gone", Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true, SweepInterval: -1})
	assert.ErrorContains(t, err, "does not exist")
}

// cancelAtEnd yields its content and cancels the context with the EOF:
// the content is all read, and the upload starts on a done context.
type cancelAtEnd struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAtEnd) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

// A Put whose context ends once the content is read, before S3 has it,
// fails with the context's error and keeps nothing.
func TestS3PutContextEndsAtUpload(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	clock := blobtest.NewClock()
	st := open(t, testOptions(m, "late", "l", clock))
	for _, digest := range []string{"", blobtest.Sum([]byte("content"))} {
		ctx, cancel := context.WithCancel(context.Background())
		id := st.NewID()
		_, err := st.Put(ctx, id, blob.PutOptions{Kind: "text/plain", SHA256: digest},
			&cancelAtEnd{r: strings.NewReader("content"), cancel: cancel})
		assert.ErrorIs(t, err, context.Canceled, "digest %q", digest)
		assert.NotContains(t, err.Error(), "s3 put", "the context's error, not the client's report of it")
		_, err = st.Stat(context.Background(), id)
		assert.ErrorIs(t, err, blob.ErrNotFound)
		cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := st.Objects().PutObject(ctx, "late", &cancelAtEnd{r: strings.NewReader("content"), cancel: cancel})
	assert.ErrorIs(t, err, context.Canceled)
	_, _, err = st.Objects().GetObject(context.Background(), "late")
	assert.ErrorIs(t, err, blob.ErrObjectNotFound)
}

// Two replicas opening at once on a new bucket both see it missing and
// both make it; the second make fails with a conflict that means the
// bucket is there. The proxy plays the first replica's part by answering
// the existence check "no such bucket" once the bucket exists. MinIO
// itself answers the make with BucketAlreadyOwnedByYou; BucketAlreadyExists
// (the name taken by another account, in AWS's global namespace) is a
// response MinIO cannot give, so the proxy answers it, as it does an
// AccessDenied, which is a failure.
func TestS3BucketMadeConcurrently(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw := rawClient(t, m)
	require.NoError(t, raw.MakeBucket(ctxTimeout(t), "race", minio.MakeBucketOptions{}))
	proxy := newRecordingProxy(t, m)
	for _, c := range []struct {
		name   string
		answer string // "" passes the make to MinIO
		status int
		fails  bool
	}{
		{"MinIO", "", 0, false},
		{"AlreadyExists", "BucketAlreadyExists", http.StatusConflict, false},
		{"AccessDenied", "AccessDenied", http.StatusForbidden, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != "/race" && r.URL.Path != "/race/" || r.URL.RawQuery != "" {
					return false
				}
				switch {
				case r.Method == http.MethodHead:
					w.WriteHeader(http.StatusNotFound)
					return true
				case r.Method == http.MethodPut && c.answer != "":
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(c.status)
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+c.answer+
						`</Code><Message>refused</Message><BucketName>race</BucketName><Resource>/race</Resource></Error>`)
					return true
				}
				return false
			})
			st, err := s3blob.Open(ctxTimeout(t), s3blob.Options{Bucket: "race", Prefix: "p", Endpoint: proxy.URL,
				Region: "us-east-1", PathStyle: true, CreateBucket: true, SweepInterval: -1})
			if c.fails {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "s3 make bucket race")
				var resp minio.ErrorResponse
				require.ErrorAs(t, err, &resp)
				assert.Equal(t, c.answer, resp.Code)
				return
			}
			require.NoError(t, err)
			defer st.Close()
			proxy.setIntercept(nil)
			_, err = st.Put(ctxTimeout(t), st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("x"))
			assert.NoError(t, err, "the bucket is usable")
		})
	}
}

// janitors counts the goroutines running a store's janitor.
func janitors() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "blob.RunJanitor(")
}

// A negative SweepInterval runs no janitor; a positive one runs one until
// Close.
func TestS3Janitor(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	clock := blobtest.NewClock()
	before := janitors()
	st := open(t, testOptions(m, "janitor", "none", clock))
	_, err := st.Sweep(ctxTimeout(t)) // a round trip, time for a janitor to start
	require.NoError(t, err)
	assert.Equal(t, before, janitors(), "SweepInterval -1: no janitor")
	require.NoError(t, st.Close())

	opts := testOptions(m, "janitor", "hourly", clock)
	opts.SweepInterval = time.Hour
	st = open(t, opts)
	// The janitor's goroutine shows in the stacks once it has started,
	// and after Close until it has returned.
	assert.Eventually(t, func() bool { return janitors() == before+1 }, 10*time.Second, 5*time.Millisecond, "a janitor runs")
	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "Close is idempotent")
	assert.Eventually(t, func() bool { return janitors() == before }, 10*time.Second, 5*time.Millisecond, "the janitor ends")
}

var errReader = errors.New("reader broken")

// brokenReader yields n bytes, then fails.
type brokenReader struct{ n int }

func (r *brokenReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errReader
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

// A content that fails past the first MiB, during the multipart upload,
// fails the Put with the reader's own error, not the S3 client's report
// of it, and leaves nothing in the bucket.
func TestS3ReaderFailsMidUpload(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw := rawClient(t, m)
	st := open(t, testOptions(m, "broken", "b", blobtest.NewClock()))
	ctx := ctxTimeout(t)
	for _, digest := range []string{"", blobtest.Sum([]byte("anything"))} {
		id := st.NewID()
		_, err := st.Put(ctx, id, blob.PutOptions{Kind: "text/plain", SHA256: digest}, &brokenReader{n: 3 << 20})
		require.ErrorIs(t, err, errReader, "digest %q", digest)
		assert.NotContains(t, err.Error(), "s3 put", "digest %q", digest)
		_, err = st.Stat(ctx, id)
		assert.ErrorIs(t, err, blob.ErrNotFound)
	}
	err := st.Objects().PutObject(ctx, "k", &brokenReader{n: 3 << 20})
	require.ErrorIs(t, err, errReader)
	assert.NotContains(t, err.Error(), "s3 put")
	for oi := range raw.ListObjects(ctx, "broken", minio.ListObjectsOptions{Prefix: "b/", Recursive: true}) {
		t.Errorf("object %s left by a failed write (%v)", oi.Key, oi.Err)
	}
}

// A sweep that cannot list the incomplete multipart uploads fails, and
// says so; a store still opens on it (its sweep at open is best effort,
// logged) and works. The proxy refuses the listing with AccessDenied, as
// S3 does for credentials without s3:ListBucketMultipartUploads: MinIO
// answers that only for an IAM user with such a policy, which takes its
// admin API to set up, while these tests run as its root user.
func TestS3UploadsListingRefused(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	proxy := newRecordingProxy(t, m)
	proxy.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !r.URL.Query().Has("uploads") {
			return false
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>`+
			`<Message>Access Denied.</Message><BucketName>refused</BucketName><Resource>/refused</Resource></Error>`)
		return true
	})
	var logs testlog.Buffer
	opts := testOptions(m, "refused", "r", blobtest.NewClock())
	opts.Endpoint, opts.Logger = proxy.URL, zerolog.New(&logs).Level(zerolog.DebugLevel)
	st := open(t, opts)
	assert.Contains(t, logs.String(), `"message":"blob sweep at open"`)
	assert.Contains(t, logs.String(), "Access Denied")

	ctx := ctxTimeout(t)
	info, err := st.Put(ctx, st.NewID(), blob.PutOptions{Kind: "text/plain"}, strings.NewReader("still works"))
	require.NoError(t, err)
	n, err := st.Sweep(ctx)
	assert.Zero(t, n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sweep staging uploads")
	var resp minio.ErrorResponse
	require.ErrorAs(t, err, &resp)
	assert.Equal(t, "AccessDenied", resp.Code)
	count, _ := st.Usage()
	assert.Equal(t, 1, count, "the blobs were listed before the uploads")
	_, err = st.Stat(ctx, info.ID)
	assert.NoError(t, err)
}
