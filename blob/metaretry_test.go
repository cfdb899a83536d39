package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changingObjects fails the first reads of an upload's metadata as S3
// does when another replica's chunk rewrote it during the read.
type changingObjects struct {
	Objects
	changes int // reads of "meta" left to fail
}

func (o *changingObjects) GetObject(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	rc, info, err := o.Objects.GetObject(ctx, key)
	if err != nil || o.changes == 0 || len(key) < 5 || key[len(key)-5:] != "/meta" {
		return rc, info, err
	}
	o.changes--
	_ = rc.Close()
	return io.NopCloser(changedReader{fmt.Errorf("get object %s: %w", key, ErrObjectChanged)}), info, nil
}

type changedReader struct{ err error }

func (r changedReader) Read([]byte) (int, error) { return 0, r.err }

type changingStore struct {
	*MemStore
	objs *changingObjects
}

func (s changingStore) Objects() Objects { return s.objs }

// A chunk whose read of the upload's metadata another writer overtook
// reads it again; one that keeps being overtaken gives up with the error.
func TestUploadMetaReadAgainWhenChanged(t *testing.T) {
	mem := NewMemStore(MemOptions{})
	t.Cleanup(func() { _ = mem.Close() })
	st := changingStore{MemStore: mem, objs: &changingObjects{Objects: mem.Objects()}}
	ups := NewUploads(st, UploadOptions{})
	ctx := context.Background()
	id, err := ups.Begin(ctx, "alice", "text/plain", 4)
	require.NoError(t, err)

	st.objs.changes = metaReadAttempts - 1
	got, err := ups.Chunk(ctx, id, PutOptions{Owner: "alice"}, 0, []byte("ab"))
	require.NoError(t, err, "read again until it is whole")
	assert.EqualValues(t, 2, got)

	st.objs.changes = metaReadAttempts
	_, err = ups.Chunk(ctx, id, PutOptions{Owner: "alice"}, 2, []byte("cd"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrObjectChanged), "%v", err)
}
