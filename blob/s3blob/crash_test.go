package s3blob_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
	"github.com/skillgate/skillgate/internal/testchild"
)

// crashHelperEnv names "endpoint prefix digest" for the child process.
const crashHelperEnv = "SKILLGATE_S3_CRASH_HELPER"

// stallingReader yields n bytes, reports readiness and blocks for ever:
// the process is killed mid-upload.
type stallingReader struct {
	n     int
	ready func()
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.ready()
		for {
			time.Sleep(time.Hour) // a sleeper, unlike select{}, is no deadlock to the runtime
		}
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'z'
	}
	r.n -= k
	return k, nil
}

// crashHelper runs in the child: a Put of 40 MiB (two multipart parts
// and more) that stalls; the parent kills it with SIGKILL.
func crashHelper(spec string) {
	f := strings.Fields(spec)
	s, err := s3blob.Open(context.Background(), s3blob.Options{Bucket: "crash", Prefix: f[1], Endpoint: f[0],
		Region: "us-east-1", PathStyle: true, SweepInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	id := s.NewID()
	fmt.Printf("id %s\n", id)
	digest := ""
	if f[2] == "digest" {
		digest = strings.Repeat("ab", 32)
	}
	_, err = s.Put(context.Background(), id, blob.PutOptions{Kind: "text/plain", SHA256: digest}, &stallingReader{n: 40 << 20, ready: func() {
		fmt.Println("ready")
		_ = os.Stdout.Sync()
	}})
	fmt.Fprintf(os.Stderr, "crash helper: Put returned %v\n", err)
	os.Exit(3)
}

// kill -9 during a Put leaves no visible blob, staged or written in place:
// only an incomplete multipart upload, which no listing or read shows.
func TestS3CrashMidUpload(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	raw, err := minio.New(m.Endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(scaleouttest.AccessKey, scaleouttest.SecretKey, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	require.NoError(t, raw.MakeBucket(t.Context(), "crash", minio.MakeBucketOptions{}))
	for _, mode := range []string{"staged", "digest"} {
		t.Run(mode, func(t *testing.T) {
			prefix := "p-" + mode
			id := testchild.KillWhenReady(t, crashHelperEnv, m.Endpoint+" "+prefix+" "+mode)
			s, err := s3blob.Open(t.Context(), s3blob.Options{Bucket: "crash", Prefix: prefix, Endpoint: m.Endpoint,
				Region: "us-east-1", PathStyle: true, SweepInterval: -1})
			require.NoError(t, err)
			defer s.Close()
			_, err = s.Stat(t.Context(), id)
			assert.ErrorIs(t, err, blob.ErrNotFound, "no partial blob is visible")
			if mode == "digest" {
				n := 0
				key := prefix + "/blobs/" + strings.TrimPrefix(id, "blob:")
				for up := range raw.ListIncompleteUploads(t.Context(), "crash", key, false) {
					require.NoError(t, up.Err)
					n++
				}
				require.Equal(t, 1, n, "the writer was killed mid multipart upload, at the blob's own key")
			}
			for oi := range raw.ListObjects(t.Context(), "crash", minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
				t.Errorf("object %s visible after the crash", oi.Key)
			}
			n, err := s.Sweep(t.Context())
			require.NoError(t, err)
			assert.Zero(t, n)
			count, _ := s.Usage()
			assert.Zero(t, count)
		})
	}
}
