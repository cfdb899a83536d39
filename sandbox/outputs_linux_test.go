package sandbox

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
)

// sparseBlobsCode writes args["n"] blobs and then makes each file
// args["size"] bytes long without writing them: sparse files, which cost
// the workspace almost no space.
const sparseBlobsCode = `import os
from runtime import blobs

def main(args):
    for i in range(args["n"]):
        blobs.write_bytes(b"x")
        os.truncate("/workspace/.blobs/%d" % i, args["size"])
    return {"n": args["n"]}
`

// countingSink streams every blob into io.Discard and counts what it got.
type countingSink struct {
	calls int
	bytes int64
}

func (s *countingSink) Output(b OutputBlob, r io.Reader) error {
	s.calls++
	n, err := io.Copy(io.Discard, r)
	s.bytes += n
	if err == nil && n != b.Size {
		err = fmt.Errorf("blob %s: read %d of %d bytes", b.ID, n, b.Size)
	}
	return err
}

// allocatedDuring returns the bytes the process allocated while fn ran.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func outputIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "blob:out-" + strconv.Itoa(i)
	}
	return ids
}

// 16 sparse files of 32 MiB (512 MiB from almost no disk) are refused by
// their sizes before a byte is read: the run fails with OUTPUT_TOO_LARGE
// naming the limit, and the gateway allocates next to nothing for them.
func TestOutputsOverTheRunLimitAreNotRead(t *testing.T) {
	r := ownRunner(t, func(c *Config) {
		c.FileSizeBytes, c.MaxOutputBlobBytes = 32<<20, 32<<20 // as a gateway with a larger --max-blob-size
	})
	sink := &countingSink{}
	var res *Result
	allocated := allocatedDuring(func() {
		res = run(t, r, sparseBlobsCode, map[string]any{"n": 16, "size": 32 << 20}, func(j *Job) {
			j.OutputBlobIDs, j.Outputs = outputIDs(16), sink
		})
	})
	t.Logf("allocated %d bytes during the run", allocated)
	requireFailed(t, res, runerror.OutputTooLarge)
	assert.Contains(t, res.Error.Message, "hold 536870912 bytes together, more than the 67108864 bytes a run may write")
	assert.Zero(t, sink.calls, "no blob reaches the sink")
	assert.Empty(t, res.OutputBlobs)
	assert.Less(t, allocated, uint64(8<<20), "the run allocated %d bytes in the gateway", allocated)
}

// Blobs within the limits are streamed to the sink from their files:
// 64 MiB of blobs pass through a gateway that allocates a small part of
// that, and the result lists them without their data.
func TestOutputsAreStreamedToTheSink(t *testing.T) {
	r := ownRunner(t, func(c *Config) {
		c.FileSizeBytes, c.MaxOutputBlobBytes, c.MaxRunOutputBytes = 32<<20, 32<<20, 1<<30
	})
	sink := &countingSink{}
	var res *Result
	allocated := allocatedDuring(func() {
		res = run(t, r, sparseBlobsCode, map[string]any{"n": 4, "size": 16 << 20}, func(j *Job) {
			j.OutputBlobIDs, j.Outputs = outputIDs(4), sink
		})
	})
	t.Logf("allocated %d bytes during the run", allocated)
	requireCompleted(t, res)
	assert.Equal(t, 4, sink.calls)
	assert.Equal(t, int64(64<<20), sink.bytes)
	require.Len(t, res.OutputBlobs, 4)
	for _, b := range res.OutputBlobs {
		assert.Equal(t, int64(16<<20), b.Size)
		assert.Nil(t, b.Data, "the data went to the sink only")
	}
	assert.Less(t, allocated, uint64(8<<20), "the run allocated %d bytes in the gateway for 64 MiB of blobs", allocated)
}
