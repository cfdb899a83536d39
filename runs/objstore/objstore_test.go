package objstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/runs/objstore"
	"github.com/skillgate/skillgate/runs/runstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// pair is two run stores over one object space, as two replicas of one
// gateway see it.
func pair(obj blob.Objects) (runs.SharedStore, runs.SharedStore) {
	return objstore.New(obj), objstore.New(obj)
}

func memObjects(t *testing.T) blob.Objects {
	s := blob.NewMemStore(blob.MemOptions{})
	t.Cleanup(func() { _ = s.Close() })
	return s.Objects()
}

func fsObjects(t *testing.T) blob.Objects {
	s, err := blob.OpenFSStore(blob.FSOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s.Objects()
}

func TestMemObjectsConformance(t *testing.T) {
	runstest.RunShared(t, func(t *testing.T) (runs.SharedStore, runs.SharedStore) { return pair(memObjects(t)) })
}

func TestFSObjectsConformance(t *testing.T) {
	runstest.RunShared(t, func(t *testing.T) (runs.SharedStore, runs.SharedStore) { return pair(fsObjects(t)) })
}

// On MinIO the two stores are two clients, as on two replicas.
func TestMinIOConformance(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	n := 0
	runstest.RunShared(t, func(t *testing.T) (runs.SharedStore, runs.SharedStore) {
		n++
		open := func() blob.Objects {
			s, err := s3blob.Open(context.Background(), s3blob.Options{Bucket: "runs", Prefix: fmt.Sprintf("test-%d", n),
				Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true, CreateBucket: true, SweepInterval: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s.Objects()
		}
		return objstore.New(open()), objstore.New(open())
	})
}

// On MinIO, as two replicas sharing a bucket: a cancel of A's run made
// on B reaches A through the bucket, and the run ends cancelled.
func TestMinIOCancelOnAnotherReplica(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	open := func() *runs.Registry {
		s, err := s3blob.Open(context.Background(), s3blob.Options{Bucket: "runs", Prefix: "cancel",
			Endpoint: m.Endpoint, Region: "us-east-1", PathStyle: true, CreateBucket: true, SweepInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		g, err := runs.Open(context.Background(), runs.Config{Store: objstore.New(s.Objects()),
			CheckpointInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(g.Close)
		return g
	}
	runstest.CancelOnAnotherReplica(t, open(), open())
}
