package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob/s3blob"
	"github.com/skillgate/skillgate/internal/scaleouttest"
	"github.com/skillgate/skillgate/session"
)

// replica is one `skillgate serve` of the scale-out test.
type replica struct {
	*gatewayProcess
	host    string
	metrics string // host:port of its metrics listener
}

// scaleout is MinIO, two replicas sharing a bucket, and HAProxy in front,
// all on loopback: the replicas on 127.0.0.2 and 127.0.0.3, HAProxy on
// 127.0.0.1, every one on the same ports, as deploy/haproxy/haproxy.cfg
// expects.
type scaleout struct {
	replicas []*replica
	lb       string // HAProxy's framed address
	lbHTTP   string
	minio    *scaleouttest.MinIO
	// startReplica starts a replica on host, one of 127.0.0.2 and .3.
	startReplica func(host string) *replica
}

func startScaleout(t *testing.T) *scaleout {
	t.Helper()
	requireSandbox(t)
	haproxy := scaleouttest.HAProxyBinary(t)
	m := scaleouttest.StartMinIO(t)
	ctx := t.Context()
	st, err := s3blob.Open(ctx, s3blob.Options{Bucket: "scaleout", Endpoint: m.Endpoint, Region: "us-east-1",
		PathStyle: true, CreateBucket: true, SweepInterval: -1})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	port := func() string { return scaleouttest.FreePort(t)[len("127.0.0.1:"):] }
	framed, tlsPort, httpPort, metricsPort := port(), port(), port(), port()
	s := &scaleout{lb: "127.0.0.1:" + framed, lbHTTP: "127.0.0.1:" + httpPort, minio: m}
	s.startReplica = func(host string) *replica {
		g := startGateway(t, "--listen", host+":"+framed, "--http-listen", host+":"+httpPort,
			"--metrics-listen", host+":"+metricsPort, "--blob-store", "s3://scaleout/e2e",
			"--s3-endpoint", m.Endpoint, "--s3-region", "us-east-1", "--s3-path-style",
			"--sandbox-workers", "1", "--sandbox-warm-pool", "0", "--drain-delay", "3s", "--drain-timeout", "5s")
		return &replica{gatewayProcess: g, host: host, metrics: host + ":" + metricsPort}
	}
	for _, host := range []string{"127.0.0.2", "127.0.0.3"} {
		s.replicas = append(s.replicas, s.startReplica(host))
	}
	cmd := exec.Command(haproxy, "-f", filepath.Join("..", "..", "deploy", "haproxy", "haproxy.cfg"), "-db")
	cmd.Env = append(os.Environ(), "SKILLGATE_LB_ADDR=127.0.0.1", "SKILLGATE_GW1=127.0.0.2", "SKILLGATE_GW2=127.0.0.3",
		"SKILLGATE_FRAMED_PORT="+framed, "SKILLGATE_TLS_PORT="+tlsPort, "SKILLGATE_HTTP_PORT="+httpPort,
		"SKILLGATE_METRICS_PORT="+metricsPort)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	return s
}

// lbClient is a framed client connected through HAProxy.
type lbClient struct {
	c   *session.Conn
	log *testlog.Buffer

	mu     sync.Mutex
	events []runEvent // run_event notifications received
}

func (l *lbClient) runEvents() []runEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]runEvent(nil), l.events...)
}

// dialLB connects through the balancer and initializes. While HAProxy
// still starts, a connection can be refused or cut: those are retried
// (a bounded number of times, as a client reconnecting would).
func dialLB(t testing.TB, addr string) *lbClient {
	t.Helper()
	var lastErr error
	for range 200 {
		l := &lbClient{log: &testlog.Buffer{}}
		cfg := session.ClientConfig()
		cfg.Logger = zerolog.New(l.log)
		cfg.OnNotification = func(_ *session.Conn, method string, params []byte) {
			var ev runEvent
			if method == "run_event" && json.Unmarshal(params, &ev) == nil {
				l.mu.Lock()
				l.events = append(l.events, ev)
				l.mu.Unlock()
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		c, err := session.Dial(ctx, addr, nil, cfg, nil)
		if err == nil {
			_, err = c.Call(ctx, "Initialize", map[string]any{"protocol_version": "1.0",
				"client": map[string]any{"name": "scaleout-e2e", "version": "1"}})
			if err == nil {
				cancel()
				l.c = c
				t.Cleanup(func() { _ = c.Close() })
				return l
			}
			_ = c.Close()
		}
		cancel()
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no connection through %s: %v", addr, lastErr)
	return nil
}

func (l *lbClient) call(t testing.TB, method string, params any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := l.c.Call(ctx, method, params)
	require.NoError(t, err, "%s", method)
	require.NoError(t, json.Unmarshal(res, out))
}

// served counts the successful calls of method a replica answered.
func (r *replica) served(t *testing.T, method string) int {
	t.Helper()
	resp, err := http.Get("http://" + r.metrics + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	prefix := fmt.Sprintf(`skillgate_rpc_requests_total{front="framed",method=%q,outcome="ok"} `, method)
	for _, line := range strings.Split(string(body), "\n") {
		if n, ok := strings.CutPrefix(line, prefix); ok {
			var v int
			_, _ = fmt.Sscan(n, &v)
			return v
		}
	}
	return 0
}

// readyz returns the replica's /readyz status.
func (r *replica) readyz(t *testing.T) int {
	resp, err := http.Get("http://" + r.metrics + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

type blobResult struct {
	BlobID string `json:"blob_id"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size_bytes"`
}

// uploadThrough uploads data in chunks, sending chunk i through
// clients[i%len], beginning on the first and finishing on the last.
func uploadThrough(t *testing.T, data []byte, clients ...*lbClient) blobResult {
	t.Helper()
	var begin struct {
		UploadID string `json:"upload_id"`
		MaxChunk int    `json:"max_chunk_bytes"`
	}
	clients[0].call(t, "begin_upload", map[string]any{"kind": "application/octet-stream", "size_bytes": len(data)}, &begin)
	chunk := min(begin.MaxChunk, 256<<10)
	for i, off := 0, 0; off < len(data); i, off = i+1, off+chunk {
		piece := data[off:min(off+chunk, len(data))]
		var got struct {
			Received int `json:"received_bytes"`
		}
		clients[i%len(clients)].call(t, "upload_chunk", map[string]any{"upload_id": begin.UploadID, "offset": off,
			"content": base64.StdEncoding.EncodeToString(piece)}, &got)
		require.Equal(t, off+len(piece), got.Received)
	}
	sum := sha256.Sum256(data)
	var res blobResult
	clients[len(clients)-1].call(t, "FinishUpload", map[string]any{"upload_id": begin.UploadID,
		"sha256": hex.EncodeToString(sum[:])}, &res)
	return res
}

// readRange reads a whole blob with read_blob mode "range".
func readRange(t *testing.T, l *lbClient, id string) []byte {
	t.Helper()
	var out []byte
	off := int64(0)
	for range 10000 {
		var r struct {
			Content    string `json:"content"`
			Encoding   string `json:"encoding"`
			NextOffset *int64 `json:"next_offset"`
		}
		l.call(t, "read_blob", map[string]any{"blob_id": id, "mode": "range", "offset": off, "max_bytes": 512 << 10}, &r)
		piece := []byte(r.Content)
		if r.Encoding == "base64" {
			var err error
			piece, err = base64.StdEncoding.DecodeString(r.Content)
			require.NoError(t, err)
		}
		out = append(out, piece...)
		if r.NextOffset == nil {
			return out
		}
		off = *r.NextOffset
	}
	t.Fatal("range reads did not end")
	return nil
}

func TestScaleOutBehindHAProxy(t *testing.T) {
	s := startScaleout(t)
	// leastconn puts two connections held open on the two replicas.
	a, b := dialLB(t, s.lb), dialLB(t, s.lb)

	var small blobResult
	a.call(t, "create_blob", map[string]any{"content": "kept by the bucket, not by a replica"}, &small)
	var read struct {
		Content string `json:"content"`
	}
	b.call(t, "read_blob", map[string]any{"blob_id": small.BlobID, "mode": "full"}, &read)
	assert.Equal(t, "kept by the bucket, not by a replica", read.Content)

	ra, rb := s.replicas[0], s.replicas[1]
	if ra.served(t, "create_blob") == 0 {
		ra, rb = rb, ra
	}
	require.Equal(t, 1, ra.served(t, "create_blob"), "replica A created the blob")
	assert.Equal(t, 0, ra.served(t, "read_blob"))
	assert.Equal(t, 1, rb.served(t, "read_blob"), "replica B read it")

	data := make([]byte, 3<<20+12345)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	up := uploadThrough(t, data, a, b)
	assert.Equal(t, int64(len(data)), up.Size)
	assert.Positive(t, ra.served(t, "upload_chunk"))
	assert.Positive(t, rb.served(t, "upload_chunk"), "chunks went to both replicas")
	assert.Equal(t, 1, ra.served(t, "begin_upload"), "begun on A")
	assert.Equal(t, 1, rb.served(t, "finish_upload"), "finished on B")
	assert.Equal(t, data, readRange(t, a, up.BlobID), "read by range through A")

	done := runOnAReadOnB(t, a, b, ra, rb)
	long := startLongRun(t, a, b)
	drain(t, s, a, b, ra, rb, small, up, data)
	afterDrain(t, s, done, long)
	killDuringUpload(t, s, ra, rb)
}

// bucketBlobs lists the blobs visible in the bucket: their count and
// bytes.
func bucketBlobs(t *testing.T, s *scaleout) (int, int64) {
	st, err := s3blob.Open(t.Context(), s3blob.Options{Bucket: "scaleout", Prefix: "e2e", Endpoint: s.minio.Endpoint,
		Region: "us-east-1", PathStyle: true, SweepInterval: -1})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Sweep(t.Context())
	require.NoError(t, err)
	return st.Usage()
}

// killDuringUpload kills B with SIGKILL while it finishes an upload: no
// partial blob becomes visible, and a new replica in A's place finishes
// the upload (or finds it finished) from the bucket.
func killDuringUpload(t *testing.T, s *scaleout, ra, rb *replica) {
	count, bytes := bucketBlobs(t, s)
	c := dialLB(t, s.lb) // B: A is gone
	data := make([]byte, 8<<20+777)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	var begin struct {
		UploadID string `json:"upload_id"`
		MaxChunk int    `json:"max_chunk_bytes"`
	}
	c.call(t, "begin_upload", map[string]any{"kind": "application/octet-stream", "size_bytes": len(data)}, &begin)
	for off := 0; off < len(data); off += begin.MaxChunk {
		var got struct{}
		c.call(t, "upload_chunk", map[string]any{"upload_id": begin.UploadID, "offset": off,
			"content": base64.StdEncoding.EncodeToString(data[off:min(off+begin.MaxChunk, len(data))])}, &got)
	}
	sum := sha256.Sum256(data)
	finish := map[string]any{"upload_id": begin.UploadID, "sha256": hex.EncodeToString(sum[:])}
	answered := make(chan json.RawMessage, 1)
	go func() {
		res, err := c.c.Call(t.Context(), "finish_upload", finish)
		if err == nil {
			answered <- res
		}
		close(answered)
	}()
	time.Sleep(30 * time.Millisecond) // into finish_upload, most likely; either way the checks hold
	require.NoError(t, rb.cmd.Process.Kill())
	_ = rb.cmd.Wait()
	<-c.c.Done()

	rc := s.startReplica(ra.host) // in A's place
	again := dialLB(t, s.lb)
	var res blobResult
	if raw, ok := <-answered; ok {
		require.NoError(t, json.Unmarshal(raw, &res), "B answered before it died")
	} else {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		raw, err := again.c.Call(ctx, "finish_upload", finish)
		cancel()
		if err == nil {
			require.NoError(t, json.Unmarshal(raw, &res), "the upload B was finishing is finished by the new replica")
		} else {
			assert.Contains(t, err.Error(), "UPLOAD_NOT_FOUND", "else B had finished it; its answer was lost")
			t.Log("B finished the upload before it died; the answer was lost")
		}
	}
	n, b := bucketBlobs(t, s)
	require.Equal(t, count+1, n, "exactly the one blob more, whole")
	require.Equal(t, bytes+int64(len(data)), b, "no partial blob is visible")
	if res.BlobID != "" {
		assert.Equal(t, data, readRange(t, again, res.BlobID))
		assert.Positive(t, rc.served(t, "read_blob"), "the new replica serves")
	}
}

// runOnAReadOnB runs code async on A and reads the finished run through
// B: get_run, watch_run replaying its events, list_runs.
func runOnAReadOnB(t *testing.T, a, b *lbClient, ra, rb *replica) string {
	var started runRef
	a.call(t, "run_code", map[string]any{"language": "python", "async": true,
		"code": "def main(args):\n    for i in range(3):\n        print('line', i)\n    return {'answer': 42}"}, &started)
	require.NotEmpty(t, started.RunID)
	var obj struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	for range 100 { // wait_ms is at most a minute; bounded
		a.call(t, "get_run", map[string]any{"run_id": started.RunID, "wait_ms": 60000}, &obj)
		if obj.Status != "running" {
			break
		}
	}
	require.Equal(t, "completed", obj.Status, "%s", obj.Error)
	assert.Equal(t, 1, ra.served(t, "run_code"), "A ran it")

	var onB struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		RunID  string          `json:"run_id"`
	}
	b.call(t, "get_run", map[string]any{"run_id": started.RunID}, &onB)
	assert.Equal(t, "completed", onB.Status)
	assert.JSONEq(t, `{"answer":42}`, string(onB.Output))
	assert.Equal(t, 1, rb.served(t, "get_run"), "B answered get_run")

	var watched struct {
		Status string `json:"status"`
	}
	b.call(t, "watch_run", map[string]any{"run_id": started.RunID}, &watched)
	assert.Equal(t, "completed", watched.Status)
	evs := b.runEvents()
	require.NotEmpty(t, evs, "B replayed the run's events")
	assert.Equal(t, "started", evs[0].Type)
	assert.Equal(t, "finished", evs[len(evs)-1].Type)
	var logs strings.Builder
	for _, ev := range evs {
		logs.WriteString(ev.Text)
	}
	assert.Contains(t, logs.String(), "line 2")

	var list struct {
		Runs []runRef `json:"runs"`
	}
	b.call(t, "list_runs", map[string]any{}, &list)
	require.NotEmpty(t, list.Runs)
	assert.Equal(t, started.RunID, list.Runs[0].RunID, "B lists A's run")
	return started.RunID
}

// startLongRun starts on A a run that outlives the drain, and sees it
// running through B (A checkpoints it to the bucket).
func startLongRun(t *testing.T, a, b *lbClient) string {
	var started runRef
	a.call(t, "run_code", map[string]any{"language": "python", "async": true, "timeout_ms": 120000,
		"code": "import time\ndef main(args):\n    print('working', flush=True)\n    time.sleep(110)"}, &started)
	var onB struct {
		Status string `json:"status"`
	}
	b.call(t, "get_run", map[string]any{"run_id": started.RunID}, &onB)
	assert.Equal(t, "running", onB.Status, "B sees A's run in progress")
	return started.RunID
}

// afterDrain checks, through the replica left, that the finished run is
// still there and the run cut by the drain is recorded interrupted.
func afterDrain(t *testing.T, s *scaleout, done, long string) {
	c := dialLB(t, s.lb)
	var obj struct {
		Status string `json:"status"`
		Error  struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	c.call(t, "get_run", map[string]any{"run_id": done}, &obj)
	assert.Equal(t, "completed", obj.Status, "no finished run lost")
	c.call(t, "get_run", map[string]any{"run_id": long}, &obj)
	assert.Equal(t, "failed", obj.Status)
	assert.Equal(t, "INTERRUPTED", obj.Error.Type, "a run past --drain-timeout is recorded interrupted")
}

// drain stops replica A with SIGTERM while clients are connected, and
// checks that they move to B with nothing acknowledged lost.
func drain(t *testing.T, s *scaleout, a, b *lbClient, ra, rb *replica, small, up blobResult, data []byte) {
	require.NoError(t, ra.cmd.Process.Signal(syscall.SIGTERM))
	notReady := false
	for range 600 { // /readyz turns 503 at once; poll, bounded
		if ra.readyz(t) == http.StatusServiceUnavailable {
			notReady = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.True(t, notReady, "replica A answers /readyz 503 while draining")
	select {
	case <-a.c.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("A's client was never closed")
	}
	assert.Contains(t, a.log.String(), "SERVER_SHUTDOWN", "A's client was told why")
	assert.Contains(t, a.log.String(), "suggested_delay_ms", "with a retry hint")
	require.NoError(t, ra.cmd.Wait(), "a drained replica exits 0")

	again := dialLB(t, s.lb) // reconnects through HAProxy, to B
	var read struct {
		Content string `json:"content"`
	}
	again.call(t, "read_blob", map[string]any{"blob_id": small.BlobID, "mode": "full"}, &read)
	assert.Equal(t, "kept by the bucket, not by a replica", read.Content)
	assert.Equal(t, data, readRange(t, again, up.BlobID))
	more := uploadThrough(t, []byte("after the drain"), again, b)
	assert.Equal(t, int64(len("after the drain")), more.Size)
	assert.Equal(t, 2, rb.served(t, "finish_upload"), "B serves everyone now")
}
