package s3blob_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// An object replaced between the open and the read (the client reads on
// the condition that it is still the object it found) is ErrObjectChanged,
// which tells a reader to read again, not that the store failed.
func TestS3ObjectChangedWhileRead(t *testing.T) {
	m := scaleouttest.StartMinIO(t)
	st := open(t, testOptions(m, "changed", "c", blobtest.NewClock()))
	ctx := context.Background()
	objs := st.Objects()
	require.NoError(t, objs.PutObject(ctx, "meta", strings.NewReader("first")))
	rc, _, err := objs.GetObject(ctx, "meta")
	require.NoError(t, err)
	defer rc.Close()
	require.NoError(t, objs.PutObject(ctx, "meta", strings.NewReader("second, longer")))
	_, err = io.ReadAll(rc)
	assert.ErrorIs(t, err, blob.ErrObjectChanged)

	rc2, _, err := objs.GetObject(ctx, "meta")
	require.NoError(t, err)
	defer rc2.Close()
	got, err := io.ReadAll(rc2)
	require.NoError(t, err)
	assert.Equal(t, "second, longer", string(got), "read again, the new object whole")
}
