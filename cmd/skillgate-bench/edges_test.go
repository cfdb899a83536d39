package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// bodyLen is the length of the body appendFrame writes for ids of those
// widths.
func TestTemplateBodyLen(t *testing.T) {
	tpl, err := newTemplate("Echo", []byte(`{"a":1}`), 0)
	require.NoError(t, err)
	for _, c := range []struct {
		seq                   uint64
		slot                  uint32
		seqDigits, slotDigits int
	}{{7, 3, 1, 1}, {12345, 678, 5, 3}} {
		fr := transport.NewReader(bytesReader(tpl.appendFrame(nil, c.seq, c.slot)), 1<<20)
		body, err := fr.ReadFrame()
		require.NoError(t, err)
		assert.Len(t, body, tpl.bodyLen(c.seqDigits, c.slotDigits), "seq %d slot %d", c.seq, c.slot)
	}
}

// A Go figure the metrics gave as 0 is a value, not the "unknown" -1.
func TestGoPerConnZeroIsKnown(t *testing.T) {
	assert.Equal(t, "-1.0 KiB", goPerConn(1024, 0, 1))
	assert.Equal(t, "1.0 KiB", goPerConn(0, 1024, 1))
	assert.Equal(t, "–", goPerConn(0, -1, 1))
}

// Without a metrics URL the Go figures are unknown (-1); with one they
// come from its gauges. PSS comes from smaps_rollup.
func TestReadMemGoFigures(t *testing.T) {
	s, err := readMem(os.Getpid(), "")
	require.NoError(t, err)
	assert.Equal(t, int64(-1), s.GoHeap)
	assert.Equal(t, int64(-1), s.GoStack)
	assert.Equal(t, int64(-1), s.Goroutines)
	if _, err := os.Stat("/proc/self/smaps_rollup"); err == nil {
		assert.Positive(t, s.PSS)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("go_memstats_heap_inuse_bytes 4096\ngo_memstats_stack_inuse_bytes 512\ngo_goroutines 9\n"))
	}))
	defer srv.Close()
	s, err = readMem(os.Getpid(), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, int64(4096), s.GoHeap)
	assert.Equal(t, int64(512), s.GoStack)
	assert.Equal(t, int64(9), s.Goroutines)
}

// The rate is answers per second of the window, 0 without a window.
func TestLoadResultRate(t *testing.T) {
	assert.InDelta(t, 250, (&loadResult{Responses: 500, Elapsed: 2 * time.Second}).Rate(), 1e-9)
	assert.Zero(t, (&loadResult{Responses: 500}).Rate())
}

// SKILLGATE_BENCH_DEBUG turns on the debug log.
func TestRunDebugLog(t *testing.T) {
	addr := startGateway(t, 0)
	args := []string{"load", "--addr", addr, "--requests", "1", "--conns", "1"}
	var out, errOut bytes.Buffer
	require.NoError(t, run(testCtx(t), args, nil, &out, &errOut))
	assert.NotContains(t, errOut.String(), "connections ready")

	t.Setenv("SKILLGATE_BENCH_DEBUG", "1")
	errOut.Reset()
	require.NoError(t, run(testCtx(t), args, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "connections ready")
}

// The framed flood numbers its frames 1, 2, 3, ... and keeps writing
// batch after batch until its context ends.
func TestFloodFramedIDs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	const want = 600 // more than two batches of 256
	ids := make(chan []string, 1)
	go func() {
		var got []string
		defer func() { ids <- got }()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		fr := transport.NewReader(nc, 1<<20)
		for len(got) < want {
			body, err := fr.ReadFrame()
			if err != nil {
				return
			}
			var m transport.Message
			if err := transport.Decode(body, &m); err != nil {
				return
			}
			got = append(got, string(m.ID))
		}
		cancel()
		// Keep reading so that the flood's last write does not block.
		for {
			if _, err := fr.ReadFrame(); err != nil {
				return
			}
		}
	}()
	sent, _ := floodFramed(ctx, ln.Addr().String(), false, keepaliveFrame)
	assert.Positive(t, sent)
	_ = ln.Close()
	got := <-ids
	require.Len(t, got, want)
	assert.Equal(t, "1-k", got[0])
	assert.Equal(t, "2-k", got[1])
	assert.Equal(t, "600-k", got[want-1])
}

// The HTTP flood keeps writing until its context ends.
func TestFloodHTTPUntilDone(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var n atomic.Int64
	const want = 200 // more than the 64 requests of one write
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		if n.Add(1) == want {
			cancel()
		}
	}))
	defer srv.Close()
	_, err := floodHTTP(ctx, strings.TrimPrefix(srv.URL, "http://"), 1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n.Load(), int64(want))
}

type uploadChunk struct {
	Offset int64
	Len    int
}

// uploadChunks runs the upload flood against a server that takes the
// first upload in chunks of 1024 bytes and refuses the next, and returns
// the chunks it got and the bytes the flood counted as accepted.
func uploadChunks(t *testing.T, size int64) ([]uploadChunk, int64) {
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var mu sync.Mutex
	var chunks []uploadChunk
	begins := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			Params struct {
				UploadID string `json:"upload_id"`
				Offset   int64  `json:"offset"`
				Content  string `json:"content"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		defer mu.Unlock()
		switch req.Method {
		case "begin_upload":
			begins++
			if begins > 1 {
				cancel()
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"quota"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"upload_id":"u","max_chunk_bytes":1024}}`))
		case "upload_chunk":
			b, err := base64.StdEncoding.DecodeString(req.Params.Content)
			assert.NoError(t, err)
			assert.Equal(t, "u", req.Params.UploadID)
			chunks = append(chunks, uploadChunk{req.Params.Offset, len(b)})
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"received_bytes":1}}`))
		}
	}))
	defer srv.Close()
	var c resourceCounts
	floodUploads(ctx, strings.TrimPrefix(srv.URL, "http://"), size, &c)
	mu.Lock()
	defer mu.Unlock()
	return chunks, c.accepted.Load()
}

// The upload flood sends every chunk of an upload at its offset, the
// last one short, and never one past the end.
func TestFloodUploadsChunks(t *testing.T) {
	chunks, accepted := uploadChunks(t, 2500)
	assert.Equal(t, []uploadChunk{{0, 1024}, {1024, 1024}, {2048, 452}}, chunks)
	assert.Equal(t, int64(2500), accepted)

	chunks, accepted = uploadChunks(t, 2048)
	assert.Equal(t, []uploadChunk{{0, 1024}, {1024, 1024}}, chunks, "no empty chunk at the end")
	assert.Equal(t, int64(2048), accepted)
}

// In duration mode the answers of the warm-up are not measured: a server
// that answers only the first request, long before the window, gives a
// window without answers.
func TestLoadWarmupNotMeasured(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		fr := transport.NewReader(nc, 1<<20)
		for n := 0; ; n++ {
			body, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if n > 0 {
				continue
			}
			var m transport.Message
			if err := transport.Decode(body, &m); err != nil {
				return
			}
			out := transport.BeginFrame(nil)
			out = transport.AppendResult(out, m.RawID, transport.EmptyObject)
			out, _ = transport.EndFrame(out, 0, transport.MaxFrameBody)
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}()
	cfg := loadConfig{
		Target: target{Addr: ln.Addr().String()}, Conns: 1, Depth: 4, NoInit: true,
		Warmup: 300 * time.Millisecond, Duration: 10 * time.Millisecond, DrainTimeout: 10 * time.Millisecond,
		Method: "_Keepalive", Params: []byte(`{}`),
	}
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	require.ErrorIs(t, err, errDrainTimeout, "the other requests are never answered")
	assert.Zero(t, res.Responses)
	assert.Zero(t, res.Latency.Count())
	_ = ln.Close()
	<-done
}
