package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
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
// from one run to one client over loopback TCP. The run writes b.N chunks
// of 16 KiB (one log event each, the coalescing bound) as fast as it can.
//
//   - stream: a streamed call; it returns once the client has read the
//     finished event and the response. The run outpaces any client, so the
//     stream compacts what it falls behind on: events/s counts the events
//     the client read, seqs/s the run's events they account for (merged
//     and gap events stand for several).
//   - watch: watch_run of the finished run, which sends every event.
func BenchmarkRunEventDelivery(b *testing.B) {
	b.Run("stream", func(b *testing.B) {
		bc := newDeliveryBench(b)
		bc.start()
		_, err := bc.c.Call(context.Background(), MethodRunCode, map[string]any{
			"language": "python", "code": "def main(args): pass", "stream": true})
		bc.stop(err)
		b.ReportMetric(float64(bc.lastSeq.Load())/bc.elapsed.Seconds(), "seqs/s")
	})
	b.Run("watch", func(b *testing.B) {
		bc := newDeliveryBench(b)
		res, err := bc.c.Call(context.Background(), MethodRunCode, map[string]any{
			"language": "python", "code": "def main(args): pass", "async": true})
		require.NoError(b, err)
		var ref struct {
			RunID string `json:"run_id"`
		}
		require.NoError(b, json.Unmarshal(res, &ref))
		_, err = bc.c.Call(context.Background(), MethodGetRun, map[string]any{"run_id": ref.RunID, "wait_ms": 60000})
		require.NoError(b, err)
		bc.start()
		_, err = bc.c.Call(context.Background(), MethodWatchRun, map[string]any{"run_id": ref.RunID})
		bc.stop(err)
		require.GreaterOrEqual(b, bc.events.Load(), int64(b.N), "watch_run sends every event")
	})
}

// deliveryBench is a dispatcher whose fake run writes b.N chunks, served
// over loopback TCP to one client that counts the events it reads.
type deliveryBench struct {
	b       *testing.B
	c       *session.Conn
	events  atomic.Int64
	lastSeq atomic.Int64
	t0      time.Time
	elapsed time.Duration
}

func newDeliveryBench(b *testing.B) *deliveryBench {
	chunk := bytes.Repeat([]byte("0123456789abcde\n"), 1024)
	// Retain every event: the watch case counts them all.
	reg, err := runs.Open(context.Background(), runs.Config{MaxEvents: b.N + 10, MaxEventBytes: (b.N + 10) * (len(chunk) + 256),
		MaxLogBytes: 1})
	require.NoError(b, err)
	e := newEnvOpts(&testing.T{}, examplesDir(), 256<<10, func(o *Options) {
		o.Runs = reg
		o.Runner = &fakeRunner{result: func(job sandbox.Job) (*sandbox.Result, error) {
			if job.Observer.Admitted != nil { // async runs only
				job.Observer.Admitted()
			}
			job.Observer.Started(0)
			for range b.N {
				job.Observer.Log(sandbox.StreamStdout, chunk)
			}
			return &sandbox.Result{Status: sandbox.StatusCompleted, Output: []byte(`{}`)}, nil
		}}
	})
	// newEnvOpts registers its cleanups on a T that never ends: close here.
	b.Cleanup(func() {
		_ = e.reg.Close()
		_ = e.blobs.Close()
	})
	cfg := session.DefaultConfig()
	cfg.Metrics = e.metrics
	srv, err := newFramedServer(cfg, e.d)
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(ln, "tcp") }()
	bc := &deliveryBench{b: b}
	ccfg := session.ClientConfig()
	ccfg.OnNotification = func(_ *session.Conn, _ string, params []byte) {
		var ev struct{ Seq int64 }
		_ = json.Unmarshal(params, &ev)
		bc.events.Add(1)
		bc.lastSeq.Store(ev.Seq)
	}
	bc.c, err = session.Dial(context.Background(), ln.Addr().String(), nil, ccfg, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = bc.c.Close() })
	_, err = bc.c.Call(context.Background(), MethodInitialize, map[string]any{"protocol_version": "1.0"})
	require.NoError(b, err)
	return bc
}

func (bc *deliveryBench) start() {
	bc.b.SetBytes(16 << 10)
	bc.b.ReportAllocs()
	bc.b.ResetTimer()
	bc.t0 = time.Now()
}

// stop ends the timing of a call that returned err and reports events/s.
func (bc *deliveryBench) stop(err error) {
	bc.elapsed = time.Since(bc.t0)
	bc.b.StopTimer()
	require.NoError(bc.b, err)
	bc.b.ReportMetric(float64(bc.events.Load())/bc.elapsed.Seconds(), "events/s")
}
