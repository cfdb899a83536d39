package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allocatedLine = regexp.MustCompile(`(?m)^go_memstats_alloc_bytes_total ([0-9.e+]+)$`)

// allocatedBytes is the gateway's runtime.MemStats.TotalAlloc as its
// metrics report it.
func allocatedBytes(t *testing.T, g *gatewayProcess) float64 {
	t.Helper()
	m := allocatedLine.FindStringSubmatch(scrape(t, "http://"+g.addrs["metrics"]+"/metrics"))
	require.NotNil(t, m, "go_memstats_alloc_bytes_total is exported")
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// A run that turns 16 output blobs into sparse 32 MiB files (512 MiB
// from almost no disk) fails with OUTPUT_TOO_LARGE naming the limit, and
// the gateway allocates a small part of one such blob while it ends the
// run: the files are measured, never read.
func TestSparseOutputBlobsAreRefusedUnread(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1", "--data-dir", t.TempDir())
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	code := `import os\nfrom runtime import blobs\n\ndef main(args):\n    for i in range(16):\n        blobs.write_bytes(b'x')\n` +
		`        os.truncate('/workspace/.blobs/%d' % i, 32 << 20)\n    return {}\n`
	before := allocatedBytes(t, g)
	r := c.run("run_code", `{"language":"python","code":"`+code+`"}`)
	allocated := allocatedBytes(t, g) - before
	t.Logf("the gateway allocated %.0f bytes for the run", allocated)
	require.Equal(t, "failed", r.Status, "%+v", r)
	require.NotNil(t, r.Error)
	assert.Equal(t, "OUTPUT_TOO_LARGE", r.Error.Type)
	assert.Contains(t, r.Error.Message, "more than the 67108864 bytes a run may write")
	assert.Empty(t, r.OutputBlobs)
	assert.Less(t, allocated, float64(16<<20), "the gateway read none of the 512 MiB")
}
