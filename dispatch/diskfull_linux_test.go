package dispatch

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/blob"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/transport"
)

// Item 12 for real: a data folder on a tmpfs too small for the blobs.
// create_blob answers STORAGE_FULL with a retry hint on both front doors,
// leaves no temp file, and the blobs stored before stay readable.
func TestCreateBlobOnFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=128k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	store, err := blob.OpenFSStore(blob.FSOptions{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) { o.Blobs = store })

	for _, c := range e.fronts() {
		var kept []string
		var full *transport.Error
		for range 32 { // 32 × 12 KB is three times the disk
			res, err := c.call("create_blob", `{"content":"`+strings.Repeat("z", 12<<10)+`"}`)
			if err != nil {
				full = err
				break
			}
			kept = append(kept, string(res))
		}
		require.NotNil(t, full, "%s: the disk filled up", c.name())
		assert.Equal(t, StringStorageFull, full.EffectiveCode(), "%s: %s", c.name(), full.Details)
		assert.Contains(t, full.Details, "out of disk space")
		assert.NotContains(t, full.Details, dir, "no path of the data folder reaches the client")
		require.NotNil(t, full.Retry)
		leftovers, gerr := os.ReadDir(dir + "/objects")
		require.NoError(t, gerr)
		for _, sh := range leftovers {
			files, _ := os.ReadDir(dir + "/objects/" + sh.Name())
			for _, f := range files {
				assert.False(t, strings.HasPrefix(f.Name(), ".tmp-"), "temp file %s left", f.Name())
			}
		}
		for _, res := range kept {
			var b CreateBlobResult
			require.NoError(t, json.Unmarshal([]byte(res), &b))
			_, rerr := c.call("read_blob", `{"blob_id":"`+b.BlobID+`","max_bytes":16}`)
			assert.Nil(t, rerr, "earlier blobs stay intact")
			require.NoError(t, store.Remove(t.Context(), b.BlobID)) // room for the other front door
		}
	}
}
