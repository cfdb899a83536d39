package s3blob_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// rawClient is a plain S3 client on the test MinIO: it writes and reads
// the bucket beside the store, as another program or an operator would.
func rawClient(t *testing.T, m *scaleouttest.MinIO) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(m.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(scaleouttest.AccessKey, scaleouttest.SecretKey, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	return c
}

// testOptions are the options of a store on m, without a janitor, on a
// clock the test moves; change what a test needs.
func testOptions(m *scaleouttest.MinIO, bucket, prefix string, clock *blobtest.Clock) s3blob.Options {
	return s3blob.Options{Bucket: bucket, Prefix: prefix, Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true,
		CreateBucket: true, MaxBlobSize: 32 << 20, Now: clock.Now, SweepInterval: -1}
}

// open opens a store with opts and closes it when the test ends.
func open(t *testing.T, opts s3blob.Options) *s3blob.Store {
	t.Helper()
	s, err := s3blob.Open(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// recordingProxy forwards every request to the real MinIO behind it and
// records the Range header of each GET; an interceptor, when set, may
// answer a request itself (it returns true when it did). The client signs
// the Host it talks to, which the proxy passes on, so MinIO accepts the
// requests.
type recordingProxy struct {
	URL string

	mu        sync.Mutex
	ranges    []string
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

// setIntercept sets the interceptor; nil forwards everything.
func (p *recordingProxy) setIntercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.intercept = f
}

func newRecordingProxy(t *testing.T, m *scaleouttest.MinIO) *recordingProxy {
	t.Helper()
	target, err := url.Parse(m.Endpoint)
	require.NoError(t, err)
	p := &recordingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		intercept := p.intercept
		p.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Range") != "" {
			p.mu.Lock()
			p.ranges = append(p.ranges, r.Header.Get("Range"))
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// takeRanges returns the Range headers recorded since the last call.
func (p *recordingProxy) takeRanges() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.ranges
	p.ranges = nil
	return out
}

// objectExists says whether key is in bucket, asked of MinIO directly.
func objectExists(t *testing.T, c *minio.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true
	}
	require.Equal(t, "NoSuchKey", minio.ToErrorResponse(err).Code, "stat %s: %v", key, err)
	return false
}

// ctxTimeout is a context bounded to a minute, the safety net of a call
// that could hang if the store misbehaved.
func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
