package s3blob_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashHelperEnv); spec != "" {
		crashHelper(spec) // never returns: the parent test kills it
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// openOn opens a store on a running MinIO with test settings.
func openOn(t *testing.T, m *scaleouttest.MinIO, prefix string, cfg blobtest.Config) *s3blob.Store {
	t.Helper()
	s, err := s3blob.Open(context.Background(), s3blob.Options{
		Bucket: "blobs", Prefix: prefix, Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true,
		CreateBucket: true, MaxBlobSize: cfg.MaxSize, TTL: cfg.TTL, Now: cfg.Now, SweepInterval: -1,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestS3Conformance(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	blobtest.Run(t, func(t *testing.T, ns string, cfg blobtest.Config) blob.Store {
		return openOn(t, m, "gw/"+ns, cfg)
	}, blobtest.Options{Replicas: true})
}
