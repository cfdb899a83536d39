package dispatch

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
)

// BenchmarkRunEventDelivery measures run_event notifications delivered
// from one streamed run to one client over loopback TCP: the run writes
// b.N chunks of 16 KiB (one log event each, the coalescing bound), and the
// call returns once the client has read every event and the response.
func BenchmarkRunEventDelivery(b *testing.B) {
	chunk := bytes.Repeat([]byte("0123456789abcde\n"), 1024)
	// Retain every event, so that a client that falls behind gets them all
	// rather than a gap: the benchmark counts delivered events.
	reg, err := runs.Open(context.Background(), runs.Config{MaxEvents: b.N + 10, MaxEventBytes: (b.N + 10) * (len(chunk) + 256),
		MaxLogBytes: 1})
	require.NoError(b, err)
	e := newEnvOpts(&testing.T{}, examplesDir(), 256<<10, func(o *Options) {
		o.Runs = reg
		o.Runner = &fakeRunner{result: func(job sandbox.Job) (*sandbox.Result, error) {
			job.Observer.Started(0)
			for range b.N {
				job.Observer.Log(sandbox.StreamStdout, chunk)
			}
			return &sandbox.Result{Status: sandbox.StatusCompleted, Output: []byte(`{}`)}, nil
		}}
	})
	// newEnvOpts registers its cleanups on a T that never ends: close here.
	defer func() {
		_ = e.reg.Close()
		_ = e.blobs.Close()
	}()
	cfg := session.DefaultConfig()
	cfg.Metrics = e.metrics
	srv, err := session.NewServer(cfg, e.d)
	require.NoError(b, err)
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(ln, "tcp") }()
	var events atomic.Int64
	ccfg := session.ClientConfig()
	ccfg.OnNotification = func(*session.Conn, string, []byte) { events.Add(1) }
	c, err := session.Dial(context.Background(), ln.Addr().String(), nil, ccfg, nil)
	require.NoError(b, err)
	defer c.Close()
	_, err = c.Call(context.Background(), MethodInitialize, map[string]any{"protocol_version": "1.0"})
	require.NoError(b, err)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	_, err = c.Call(context.Background(), MethodRunCode, map[string]any{
		"language": "python", "code": "def main(args): pass", "stream": true})
	elapsed := time.Since(start)
	b.StopTimer()
	require.NoError(b, err)
	require.GreaterOrEqual(b, events.Load(), int64(b.N))
	b.ReportMetric(float64(events.Load())/elapsed.Seconds(), "events/s")
}
