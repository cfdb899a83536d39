package blob

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSObjectsPutOverAFolderFails: in the FS store a key that is the
// folder of other keys ("runs/r1" beside "runs/r1/record") cannot be
// written: the Put fails, the other key is untouched and no temp file is
// left behind.
func TestFSObjectsPutOverAFolderFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFS(t, dir, FSOptions{})
	defer s.Close()
	o := s.Objects()
	require.NoError(t, o.PutObject(ctx, "runs/r1/record", strings.NewReader("kept")))
	err := o.PutObject(ctx, "runs/r1", strings.NewReader("over the folder"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "put object runs/r1: ")

	list, err := o.ListObjects(ctx, "runs/")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "runs/r1/record", list[0].Key)
	var files []string
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, objectsKVDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, d.Name())
		}
		return err
	}))
	assert.Equal(t, []string{"record"}, files, "no temp file left")
}
