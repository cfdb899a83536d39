package blobtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
)

func getObject(t *testing.T, o blob.Objects, key string) string {
	t.Helper()
	rc, _, err := o.GetObject(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(data)
}

func keys(infos []blob.ObjectInfo) []string {
	out := make([]string, 0, len(infos))
	for _, i := range infos {
		out = append(out, i.Key)
	}
	return out
}

func (s *suite) testObjects(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	o := st.Objects()
	ctx := context.Background()
	for _, k := range []string{"runs/r2/record.json", "runs/r1/record.json", "runs/r1/events/000001", "other"} {
		require.NoError(t, o.PutObject(ctx, k, strings.NewReader("v:"+k)))
	}
	assert.Equal(t, "v:runs/r1/record.json", getObject(t, o, "runs/r1/record.json"))
	require.NoError(t, o.PutObject(ctx, "runs/r1/record.json", strings.NewReader("replaced")))
	assert.Equal(t, "replaced", getObject(t, o, "runs/r1/record.json"))

	list, err := o.ListObjects(ctx, "runs/")
	require.NoError(t, err)
	assert.Equal(t, []string{"runs/r1/events/000001", "runs/r1/record.json", "runs/r2/record.json"}, keys(list))
	assert.Equal(t, int64(len("replaced")), list[1].Size)
	assert.WithinDuration(t, time.Now(), list[1].Modified, time.Hour)
	list, err = o.ListObjects(ctx, "runs/r1")
	require.NoError(t, err)
	assert.Equal(t, []string{"runs/r1/events/000001", "runs/r1/record.json"}, keys(list), "a prefix need not end at a slash")
	list, err = o.ListObjects(ctx, "nothing/")
	require.NoError(t, err)
	assert.Empty(t, list)
	list, err = o.ListObjects(ctx, "")
	require.NoError(t, err)
	assert.Len(t, list, 4, "the blobs themselves are not objects")

	require.NoError(t, o.DeleteObject(ctx, "runs/r1/record.json"))
	require.NoError(t, o.DeleteObject(ctx, "runs/r1/record.json"), "deleting a missing key is no error")
	_, _, err = o.GetObject(ctx, "runs/r1/record.json")
	assert.ErrorIs(t, err, blob.ErrObjectNotFound)
	assert.Equal(t, "v:runs/r1/events/000001", getObject(t, o, "runs/r1/events/000001"))

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	require.NoError(t, o.PutObject(ctx, "big", bytes.NewReader(big)))
	assert.Equal(t, string(big), getObject(t, o, "big"))

	require.Error(t, o.PutObject(ctx, "broken", &failingReader{n: 10}))
	_, _, err = o.GetObject(ctx, "broken")
	assert.ErrorIs(t, err, blob.ErrObjectNotFound, "a failed write leaves nothing")
}

func (s *suite) testObjectKeys(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	o := st.Objects()
	ctx := context.Background()
	for _, k := range []string{"", "/a", "a/", "a//b", "../a", "a/../b", "./a", ".hidden", "a/.x", "a b", "a\x00b",
		"a\\b", "ü", strings.Repeat("a", 513)} {
		assert.ErrorIs(t, o.PutObject(ctx, k, strings.NewReader("x")), blob.ErrInvalidKey, "put %q", k)
		_, _, err := o.GetObject(ctx, k)
		assert.ErrorIs(t, err, blob.ErrInvalidKey, "get %q", k)
		assert.ErrorIs(t, o.DeleteObject(ctx, k), blob.ErrInvalidKey, "delete %q", k)
	}
	_, err := o.ListObjects(ctx, "../")
	assert.ErrorIs(t, err, blob.ErrInvalidKey)
	assert.NoError(t, blob.ValidateKey("runs/2026-11-23/run_01.json"))
}

// testCreateObject: CreateObject stores only where no object is, and of
// writers racing for one key exactly one wins.
func (s *suite) testCreateObject(t *testing.T) {
	st, _, _ := s.store(t, 1<<20, 0)
	o := st.Objects()
	ctx := context.Background()
	require.NoError(t, o.CreateObject(ctx, "claims/a", []byte("first")))
	assert.ErrorIs(t, o.CreateObject(ctx, "claims/a", []byte("second")), blob.ErrObjectExists)
	assert.Equal(t, "first", getObject(t, o, "claims/a"), "the first writer's content stays")
	require.NoError(t, o.CreateObject(ctx, "claims/empty", nil))
	assert.Equal(t, "", getObject(t, o, "claims/empty"))
	assert.ErrorIs(t, o.CreateObject(ctx, "../x", nil), blob.ErrInvalidKey)

	errs := race(func(i int) error {
		return o.CreateObject(ctx, "claims/raced", []byte{byte('0' + i)})
	})
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "two writers created one key: %v", errs)
			won = i
			continue
		}
		assert.ErrorIs(t, err, blob.ErrObjectExists)
	}
	require.NotEqual(t, -1, won, "%v", errs)
	assert.Equal(t, string(rune('0'+won)), getObject(t, o, "claims/raced"))
	require.NoError(t, o.DeleteObject(ctx, "claims/raced"))
	require.NoError(t, o.CreateObject(ctx, "claims/raced", nil), "a deleted key can be created again")
}
