package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
)

// rssKB reads a process's resident set size.
func rssKB(tb testing.TB, pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(tb, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// BenchmarkStreamedUploadRSS uploads one large blob (SKILLGATE_RSS_UPLOAD_MB,
// default 512) in chunks through a gateway whose blobs live in MinIO, and
// reports the gateway's resident memory before, after 64 MiB and at its
// peak: a streamed upload keeps it flat whatever the blob's size.
//
//	go test ./cmd/skillgate -run '^$' -bench StreamedUploadRSS -benchtime 1x
func BenchmarkStreamedUploadRSS(b *testing.B) {
	mb := 512
	if v, err := strconv.Atoi(os.Getenv("SKILLGATE_RSS_UPLOAD_MB")); err == nil && v > 0 {
		mb = v
	}
	m := scaleouttest.StartMinIO(b)
	st, err := s3blob.Open(b.Context(), s3blob.Options{Bucket: "rss", Endpoint: m.Endpoint, Region: "us-east-1",
		PathStyle: true, CreateBucket: true, SweepInterval: -1})
	require.NoError(b, err)
	require.NoError(b, st.Close())
	g := startGateway(b, "--blob-store", "s3://rss/gw", "--s3-endpoint", m.Endpoint, "--s3-region", "us-east-1",
		"--s3-path-style", "--sandbox-workers", "0", "--max-blob-size", strconv.Itoa((mb+1)<<20))
	pid := g.cmd.Process.Pid
	c := dialLB(b, g.addrs["tcp"])
	chunk := make([]byte, 2<<20)
	h := sha256.New()
	var begin struct {
		UploadID string `json:"upload_id"`
		MaxChunk int    `json:"max_chunk_bytes"`
	}
	start := rssKB(b, pid)
	for b.Loop() {
		c.call(b, "begin_upload", map[string]any{"kind": "application/octet-stream", "size_bytes": mb << 20}, &begin)
		size := min(begin.MaxChunk, len(chunk))
		peak, at64 := start, 0
		for off := 0; off < mb<<20; off += size {
			n := min(size, mb<<20-off)
			for i := range n {
				chunk[i] = byte(off + i*7)
			}
			h.Write(chunk[:n])
			var got struct{}
			c.call(b, "upload_chunk", map[string]any{"upload_id": begin.UploadID, "offset": off,
				"content": base64.StdEncoding.EncodeToString(chunk[:n])}, &got)
			peak = max(peak, rssKB(b, pid))
			if at64 == 0 && off >= 64<<20 {
				at64 = rssKB(b, pid)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			var res blobResult
			c.call(b, "finish_upload", map[string]any{"upload_id": begin.UploadID, "sha256": hex.EncodeToString(h.Sum(nil))}, &res)
		}()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			default:
				peak = max(peak, rssKB(b, pid))
				time.Sleep(10 * time.Millisecond) // sampling, not synchronization
			}
		}
		b.ReportMetric(float64(start)/1024, "rss-start-MB")
		b.ReportMetric(float64(at64)/1024, "rss-at-64MiB-MB")
		b.ReportMetric(float64(peak)/1024, "rss-peak-MB")
		b.ReportMetric(float64(mb), "upload-MB")
	}
}
