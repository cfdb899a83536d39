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
	"syscall"
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

// fakeLoadServer accepts one connection and, for the n-th request it
// reads (from 0), writes the answer reply returns (none when nil). It
// returns the address and a function that stops it.
func fakeLoadServer(t *testing.T, reply func(n int, m *transport.Message) []byte) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
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
			var m transport.Message
			if err := transport.Decode(body, &m); err != nil {
				t.Error(err)
				return
			}
			answer := reply(n, &m)
			if answer == nil {
				continue
			}
			out, err := transport.AppendFrame(nil, answer, transport.MaxFrameBody)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String(), func() {
		_ = ln.Close()
		<-done
	}
}

func resultFor(m *transport.Message) []byte {
	return transport.AppendResult(nil, m.RawID, transport.EmptyObject)
}

// In duration mode the answers of the warm-up are not measured: a server
// that answers only the first request, long before the window, gives a
// window without answers.
func TestLoadWarmupNotMeasured(t *testing.T) {
	addr, stop := fakeLoadServer(t, func(n int, m *transport.Message) []byte {
		if n > 0 {
			return nil
		}
		return resultFor(m)
	})
	defer stop()
	cfg := loadConfig{
		Target: target{Addr: addr}, Conns: 1, Depth: 4, NoInit: true,
		Warmup: 2 * time.Second, Duration: 10 * time.Millisecond, DrainTimeout: 10 * time.Millisecond,
		Method: "_Keepalive", Params: []byte(`{}`),
	}
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	require.ErrorIs(t, err, errDrainTimeout, "the other requests are never answered")
	assert.Zero(t, res.Responses)
	assert.Zero(t, res.Latency.Count())
}

// In count mode the window runs from the first request to the last
// answer, after the set-up (here a slow Initialize), and holds every
// latency; requests are numbered from 1.
func TestLoadCountWindowAfterSetup(t *testing.T) {
	var first atomic.Value
	addr, stop := fakeLoadServer(t, func(n int, m *transport.Message) []byte {
		if m.IsMethod("Initialize") {
			time.Sleep(50 * time.Millisecond)
		} else if n == 1 {
			first.Store(string(m.ID))
		}
		return resultFor(m)
	})
	defer stop()
	cfg := loadConfig{Target: target{Addr: addr}, Conns: 1, Depth: 2, Requests: 10, Method: "_Keepalive", Params: []byte(`{}`)}
	start := time.Now()
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), res.Responses)
	assert.LessOrEqual(t, res.Elapsed, took-res.Setup, "the window starts after the set-up")
	assert.LessOrEqual(t, res.Latency.Max(), res.Elapsed)
	assert.Regexp(t, `^pt-1-\d+$`, first.Load())
}

// An answer for a slot past the window fails the connection.
func TestLoadConnAnswerOutsideTheWindow(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	tpl, err := newTemplate("_Keepalive", []byte(`{}`), 0)
	require.NoError(t, err)
	rs := &runState{base: time.Now(), stop: make(chan struct{})}
	rs.phase.Store(phaseMeasure)
	c := newLoadConn(newWireConn(client), &tpl, rs, 2, 2)
	go c.readLoop()
	frame, err := transport.AppendFrame(nil, []byte(`{"jsonrpc":"2.0","result":{},"id":"pt-1-2"}`), transport.MaxFrameBody)
	require.NoError(t, err)
	_, err = server.Write(frame)
	require.NoError(t, err)
	require.NoError(t, server.Close())
	<-c.readerDone
	assert.ErrorIs(t, c.err, errBadResponse)
}

// A run without a connection reports why the first one failed.
func TestLoadNoServerFirstErr(t *testing.T) {
	cfg := loadConfig{Target: target{Addr: unusedAddr(t), Timeout: time.Second}, Conns: 2, Requests: 1, Method: "_Keepalive", Params: []byte(`{}`)}
	res, err := runLoad(testCtx(t), cfg, testLog(t))
	require.ErrorIs(t, err, errNoConns)
	var opErr *net.OpError
	assert.ErrorAs(t, res.FirstErr, &opErr)
}

// A sleep of 0 only reports whether the context is still live.
func TestSleepCtxZero(t *testing.T) {
	assert.True(t, sleepCtx(t.Context(), 0))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 100 {
		require.False(t, sleepCtx(ctx, 0))
	}
}

// raiseNofile raises a lowered soft limit to the hard one.
func TestRaiseNofileFromBelow(t *testing.T) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Max < 64 {
		t.Skip("hard limit too low:", lim.Max)
	}
	saved := lim
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved) })
	lim.Cur = lim.Max / 2
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	n, err := raiseNofile()
	require.NoError(t, err)
	assert.Equal(t, saved.Max, n)
}
