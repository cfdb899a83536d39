package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testpki"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// runEvent is a run_event notification as a client sees it.
type runEvent struct {
	RunID     string `json:"run_id"`
	RequestID string `json:"request_id"`
	Seq       uint64 `json:"seq"`
	Type      string `json:"type"`
	Stream    string `json:"stream"`
	Text      string `json:"text"`
	What      string `json:"what"`
	Status    string `json:"status"`
	BlobID    string `json:"blob_id"`
	FromSeq   uint64 `json:"from_seq"`
	ToSeq     uint64 `json:"to_seq"`
	Progress  *float64
	Total     *float64
}

// liveClient is a framed connection that records the run_event
// notifications it receives, per run, in arrival order.
type liveClient struct {
	t    *testing.T
	conn *session.Conn
	// slow, when set, is called for each event on the read loop: a client
	// that reads its events slowly.
	slow func()

	mu     sync.Mutex
	events map[string][]runEvent
}

func dialLive(t *testing.T, addr string, tlsConf *tls.Config, token string) *liveClient {
	t.Helper()
	return dialLiveWith(t, token, func(cfg session.Config) (*session.Conn, error) {
		return session.Dial(t.Context(), addr, tlsConf, cfg, nil)
	})
}

// dialLiveSmallWindow dials a plain TCP connection whose receive buffer is
// as small as the kernel allows, so that a client that stops reading makes
// the gateway's queue back up at once instead of after megabytes of kernel
// buffers.
func dialLiveSmallWindow(t *testing.T, addr string) *liveClient {
	t.Helper()
	return dialLiveWith(t, "", func(cfg session.Config) (*session.Conn, error) {
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return errors.Join(err, serr)
		}}
		nc, err := d.DialContext(t.Context(), "tcp", addr)
		if err != nil {
			return nil, err
		}
		return session.NewClientConn(nc, cfg, nil)
	})
}

func dialLiveWith(t *testing.T, token string, connect func(session.Config) (*session.Conn, error)) *liveClient {
	t.Helper()
	lc := &liveClient{t: t, events: map[string][]runEvent{}}
	cfg := session.ClientConfig()
	cfg.OnNotification = func(_ *session.Conn, method string, params []byte) {
		if method != "run_event" {
			return
		}
		var ev runEvent
		if json.Unmarshal(params, &ev) != nil {
			return
		}
		if lc.slow != nil {
			lc.slow()
		}
		lc.mu.Lock()
		lc.events[ev.RunID] = append(lc.events[ev.RunID], ev)
		lc.mu.Unlock()
	}
	conn, err := connect(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	init := map[string]any{"protocol_version": "1.0"}
	if token != "" {
		init["token"] = token
	}
	_, err = conn.Call(t.Context(), "Initialize", init)
	require.NoError(t, err)
	lc.conn = conn
	return lc
}

// call calls method and decodes the result into out (when not nil).
func (lc *liveClient) call(method, params string, out any) error {
	lc.t.Helper()
	ctx, cancel := context.WithTimeout(lc.t.Context(), 2*time.Minute) // safety net only
	defer cancel()
	res, err := lc.conn.Call(ctx, method, json.RawMessage(params))
	if err == nil && out != nil {
		require.NoError(lc.t, json.Unmarshal(res, out))
	}
	return err
}

func (lc *liveClient) eventsOf(runID string) []runEvent {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return append([]runEvent(nil), lc.events[runID]...)
}

// runRef is a run's id and status, as cancel_run, list_runs and an async
// start answer them.
type runRef struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

type liveRunObject struct {
	RunID       string `json:"run_id"`
	Status      string `json:"status"`
	Output      json.RawMessage
	OutputBlobs []string `json:"output_blobs"`
	LogsPreview string   `json:"logs_preview"`
	LogsBlob    string   `json:"logs_blob"`
	DurationMS  int64    `json:"duration_ms"`
	Error       *struct{ Type, Message string }
	Retry       *struct {
		MaxAttempts int `json:"max_attempts"`
	}
	Progress json.RawMessage
}

// requireWellFormed checks a run's complete event stream: started first,
// finished last, seq 1, 2, 3… without holes (a gap event stands for the
// seqs it names, a merged log event those from its from_seq), and returns
// the text of its stdout log events.
func requireWellFormed(t *testing.T, evs []runEvent, requestID string) string {
	t.Helper()
	require.NotEmpty(t, evs)
	require.Equal(t, "started", evs[0].Type, "%+v", evs[0])
	require.Equal(t, "finished", evs[len(evs)-1].Type)
	var logs strings.Builder
	var prev uint64
	for i, ev := range evs {
		switch {
		case ev.Type == "gap":
			require.Equal(t, prev+1, ev.FromSeq, "gap %d of %d: %+v", i, len(evs), ev)
			require.Equal(t, ev.ToSeq, ev.Seq)
		case ev.FromSeq != 0: // log events merged under backpressure
			require.Equal(t, "log", ev.Type)
			require.Equal(t, prev+1, ev.FromSeq, "merged event %d of %d: %+v", i, len(evs), ev)
			require.Greater(t, ev.Seq, ev.FromSeq)
		default:
			require.Equal(t, prev+1, ev.Seq, "event %d of %d: %+v", i, len(evs), ev)
		}
		prev = ev.Seq
		require.Equal(t, requestID, ev.RequestID)
		if ev.Type == "log" {
			require.Contains(t, []string{"stdout", "stderr", "log"}, ev.Stream)
			if ev.Stream == "stdout" {
				logs.WriteString(ev.Text)
			}
		}
	}
	return logs.String()
}

const chattyCode = `import runtime, time
def main(args):
    for i in range(args['n']):
        print('line', i)
        runtime.progress(i + 1, args['n'], 'step %d' % i)
        if args.get('pause'):
            time.sleep(args['pause'])
    runtime.blobs.write_text('made by the run')
    return {'lines': args['n']}
`

func chattyParams(n int, pause float64, extra string) string {
	code, _ := json.Marshal(chattyCode)
	return fmt.Sprintf(`{"language":"python","code":%s,"args":{"n":%d,"pause":%g}%s}`, code, n, pause, extra)
}

func expectedLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// tlsGateway starts a gateway with a TLS listener and returns it with a
// client configuration that trusts it.
func tlsGateway(t *testing.T, args ...string) (*gatewayProcess, *tls.Config) {
	ca := testpki.NewCA("live runs CA")
	cert, key := testpki.WritePEM(t.TempDir(), "server", ca.Server())
	g := startGateway(t, append([]string{"--tls-listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key}, args...)...)
	return g, testpki.ClientConfig(ca.Pool(), nil)
}

// Over plain TCP and TLS a streamed run sends started first, its log
// lines, progress and blob, finished last, seq without holes, every event
// before the response; the response is the ordinary run object.
func TestStreamedRunEvents(t *testing.T) {
	requireSandbox(t)
	g, tlsConf := tlsGateway(t, "--sandbox-workers", "2")
	for _, kind := range []string{"tcp", "tls"} {
		t.Run(kind, func(t *testing.T) {
			var conf *tls.Config
			if kind == "tls" {
				conf = tlsConf
			}
			lc := dialLive(t, g.addrs[kind], conf, "")
			var run liveRunObject
			require.NoError(t, lc.call("run_code", chattyParams(300, 0, `,"stream":true`), &run))
			require.Equal(t, "completed", run.Status, "%+v", run)
			// Events arrive on the read loop before the response it then
			// reads: all of them are recorded once Call has returned.
			evs := lc.eventsOf(run.RunID)
			logs := requireWellFormed(t, evs, "cl-2")
			assert.Equal(t, expectedLines(300), logs)
			types := map[string]int{}
			for _, ev := range evs {
				types[ev.Type]++
			}
			assert.Positive(t, types["progress"])
			assert.LessOrEqual(t, types["progress"], 300)
			assert.Equal(t, 1, types["blob"])
			assert.Equal(t, "run_code", evs[0].What)
			assert.Equal(t, "completed", evs[len(evs)-1].Status)
			// Nothing of the run comes after its response.
			require.NoError(t, lc.call("list_runs", `{}`, nil))
			assert.Len(t, lc.eventsOf(run.RunID), len(evs))
		})
	}
}

// What a streamed run writes to stdout, to stderr and with runtime.log
// arrives as log events of three streams, each stream whole and in order;
// logs_preview holds all three.
func TestStreamedRunStreams(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1")
	lc := dialLive(t, g.addrs["tcp"], nil, "")
	code, _ := json.Marshal("import sys, runtime\ndef main(args):\n    for i in range(50):\n" +
		"        print('out', i)\n        print('err', i, file=sys.stderr)\n        runtime.log.info('log %d' % i)\n    return {}\n")
	var run liveRunObject
	require.NoError(t, lc.call("run_code", `{"language":"python","code":`+string(code)+`,"stream":true}`, &run))
	require.Equal(t, "completed", run.Status, "%+v", run)
	evs := lc.eventsOf(run.RunID)
	requireWellFormed(t, evs, "cl-2")
	got := map[string]string{}
	for _, ev := range evs {
		if ev.Type == "log" {
			got[ev.Stream] += ev.Text
		}
	}
	want := map[string]*strings.Builder{"stdout": {}, "stderr": {}, "log": {}}
	for i := range 50 {
		fmt.Fprintf(want["stdout"], "out %d\n", i)
		fmt.Fprintf(want["stderr"], "err %d\n", i)
		fmt.Fprintf(want["log"], "[info] log %d\n", i)
	}
	for stream, text := range want {
		assert.Equal(t, text.String(), got[stream], stream)
		assert.Contains(t, run.LogsPreview, strings.SplitAfter(text.String(), "\n")[49], stream)
	}
}

// cancel_run stops a run while it is queued, while it runs (streamed on
// another connection: that call answers the failed run object), and
// answers a finished run's status without error.
func TestCancelRun(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1", "--sandbox-warm-pool", "1")
	a := dialLive(t, g.addrs["tcp"], nil, "")
	b := dialLive(t, g.addrs["tcp"], nil, "")
	sleeper := chattyParams(1000, 0.05, "")

	// Running, streamed on a: b cancels it.
	streamed := make(chan liveRunObject, 1)
	go func() {
		var r liveRunObject
		assert.NoError(t, a.call("run_code", sleeper[:len(sleeper)-1]+`,"stream":true}`, &r))
		streamed <- r
	}()
	runID := waitForRun(t, b, "running")
	// Queued behind it (one worker): an async run.
	var queued liveRunObject
	require.NoError(t, b.call("run_code", chattyParams(1, 0, `,"async":true`), &queued))
	require.Equal(t, "running", queued.Status)

	var st runRef
	require.NoError(t, b.call("cancel_run", `{"run_id":"`+queued.RunID+`"}`, &st))
	assert.Equal(t, "failed", st.Status)
	require.NoError(t, b.call("cancel_run", `{"run_id":"`+runID+`"}`, &st))
	assert.Equal(t, "failed", st.Status)
	r := <-streamed
	require.Equal(t, "failed", r.Status, "%+v", r)
	require.Equal(t, "CANCELLED", r.Error.Type)
	requireWellFormed(t, a.eventsOf(runID), "cl-2")

	var got liveRunObject
	require.NoError(t, b.call("get_run", `{"run_id":"`+queued.RunID+`"}`, &got))
	assert.Equal(t, "failed", got.Status)
	assert.Equal(t, "CANCELLED", got.Error.Type)

	// Finished: not an error, the final status.
	var done liveRunObject
	require.NoError(t, b.call("run_code", chattyParams(1, 0, ""), &done))
	require.NoError(t, b.call("cancel_run", `{"run_id":"`+done.RunID+`"}`, &st))
	assert.Equal(t, "completed", st.Status)
	// The worker is free again: nothing of the cancelled runs holds it.
	require.NoError(t, b.call("run_code", chattyParams(1, 0, ""), &done))
	assert.Equal(t, "completed", done.Status)
}

// waitForRun polls list_runs until one run of the caller has status and
// returns its id.
func waitForRun(t *testing.T, lc *liveClient, status string) string {
	t.Helper()
	for range 600 {
		var page struct {
			Runs []runRef `json:"runs"`
		}
		require.NoError(t, lc.call("list_runs", `{"status":"`+status+`"}`, &page))
		if len(page.Runs) > 0 {
			return page.Runs[0].RunID
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not an assertion
	}
	t.Fatal("no run reached status " + status)
	return ""
}

// An async run outlives the connection that started it; another
// connection resumes its stream with watch_run from any seq without a
// missing line, and get_run long-polls its result. After a restart
// finished runs are still answered, and a run the gateway lost answers
// INTERRUPTED.
func TestAsyncRunWatchAndRestart(t *testing.T) {
	requireSandbox(t)
	data := t.TempDir()
	g := startGateway(t, "--sandbox-workers", "2", "--data-dir", data)
	a := dialLive(t, g.addrs["tcp"], nil, "")
	var started runRef
	require.NoError(t, a.call("run_code", chattyParams(40, 0.02, `,"async":true`), &started))
	require.Equal(t, "running", started.Status)
	require.NoError(t, a.conn.Close())

	b := dialLive(t, g.addrs["tcp"], nil, "")
	var final liveRunObject
	require.NoError(t, b.call("watch_run", `{"run_id":"`+started.RunID+`","after_seq":0}`, &final))
	require.Equal(t, "completed", final.Status, "%+v", final)
	evs := b.eventsOf(started.RunID)
	assert.Equal(t, expectedLines(40), requireWellFormed(t, evs, ""))

	c := dialLive(t, g.addrs["tcp"], nil, "")
	require.NoError(t, c.call("watch_run", `{"run_id":"`+started.RunID+`","after_seq":3}`, nil))
	assert.Equal(t, evs[3:], c.eventsOf(started.RunID), "resumed after seq 3")

	var polled liveRunObject
	require.NoError(t, c.call("get_run", `{"run_id":"`+started.RunID+`","wait_ms":1000}`, &polled))
	assert.Equal(t, final, polled)

	var lost runRef
	require.NoError(t, c.call("run_code", chattyParams(1000, 0.05, `,"async":true`), &lost))
	waitForRun(t, c, "running")
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGKILL))
	_ = g.cmd.Wait()

	g2 := startGateway(t, "--sandbox-workers", "1", "--data-dir", data)
	d := dialLive(t, g2.addrs["tcp"], nil, "")
	var again liveRunObject
	require.NoError(t, d.call("get_run", `{"run_id":"`+started.RunID+`"}`, &again))
	assert.Equal(t, final, again)
	require.NoError(t, d.call("get_run", `{"run_id":"`+lost.RunID+`"}`, &again))
	assert.Equal(t, "failed", again.Status)
	require.NotNil(t, again.Error)
	assert.Equal(t, "INTERRUPTED", again.Error.Type)
	assert.NotNil(t, again.Retry)
	var page struct {
		Runs []runRef `json:"runs"`
	}
	require.NoError(t, d.call("list_runs", `{"status":"finished"}`, &page))
	assert.Len(t, page.Runs, 2)
}

// Fifty streamed runs on one connection each get their own complete,
// ordered stream.
func TestManyStreamedRunsOnOneConnection(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "13", "--sandbox-warm-pool", "2")
	lc := dialLive(t, g.addrs["tcp"], nil, "")
	var wg sync.WaitGroup
	results := make(chan liveRunObject, 50)
	for range 50 {
		wg.Go(func() {
			var r liveRunObject
			assert.NoError(t, lc.call("run_code", chattyParams(20, 0, `,"stream":true`), &r))
			results <- r
		})
	}
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		require.Equal(t, "completed", r.Status, "%+v", r)
		evs := lc.eventsOf(r.RunID)
		require.NotEmpty(t, evs)
		assert.Equal(t, expectedLines(20), requireWellFormed(t, evs, evs[0].RequestID))
	}
	assert.Equal(t, 50, n)
}

// A run that prints 200,000 lines to a client that stops reading its
// events, on a connection whose queue bound is far smaller than the logs:
// the run finishes while the client reads nothing (the sandbox is not held
// up), the client is not cut off and, once it reads again, gets what was
// left compacted (merged log events, gap events) in a well-formed stream.
// Every line stays available through watch_run and the logs blob.
func TestChattyRunSlowReader(t *testing.T) {
	requireSandbox(t)
	// Keepalives and write deadlines would rightly cut a client that
	// reads nothing for as long as the run takes on a loaded machine.
	g := startGateway(t, "--sandbox-workers", "1", "--max-message-size", "131072", "--max-queued-bytes", "131072",
		"--write-timeout", "10m", "--keepalive-interval", "10m")
	lc := dialLiveSmallWindow(t, g.addrs["tcp"])
	paused, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lc.slow = func() { once.Do(func() { close(paused); <-release }) }
	// Lines of control characters, which JSON escapes six-fold: the
	// events (5 MB) outweigh the kernel's loopback buffers while the logs
	// stay under their 1 MiB cap.
	code, _ := json.Marshal("import sys\ndef main(args):\n    for i in range(200000):\n        sys.stdout.write('\\x01\\x02\\x03%c\\n' % (48 + i % 10))\n    return {}\n")
	var run liveRunObject
	called := make(chan error, 1)
	go func() {
		called <- lc.call("run_code", `{"language":"python","code":`+string(code)+`,"stream":true}`, &run)
	}()
	<-paused

	other := dialLive(t, g.addrs["tcp"], nil, "")
	var list struct{ Runs []runRef }
	require.NoError(t, other.call("list_runs", `{"limit":1}`, &list))
	require.Len(t, list.Runs, 1)
	id := list.Runs[0].RunID
	var obj liveRunObject
	for i := 0; i < 10 && obj.Status != "completed"; i++ { // each wait is bounded by wait_ms
		require.NoError(t, other.call("get_run", `{"run_id":"`+id+`","wait_ms":60000}`, &obj))
	}
	require.Equal(t, "completed", obj.Status, "the run finished while its client read nothing")
	t.Logf("the run took %d ms while its client read nothing", obj.DurationMS)

	close(release)
	require.NoError(t, <-called)
	require.Equal(t, "completed", run.Status, "%+v", run)
	evs := lc.eventsOf(id)
	requireWellFormed(t, evs, "cl-2")
	compacted := 0
	for _, ev := range evs {
		if ev.Type == "gap" || ev.FromSeq != 0 {
			compacted++
		}
	}
	assert.Positive(t, compacted, "the stream was compacted: %d events", len(evs))

	var want strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&want, "\x01\x02\x03%d\n", i%10)
	}
	require.NoError(t, other.call("watch_run", `{"run_id":"`+id+`"}`, nil))
	assert.Equal(t, want.String(), requireWellFormed(t, other.eventsOf(id), "cl-2"), "watch_run replays every line")
	require.NotEmpty(t, run.LogsBlob)
	var blob struct {
		Content   string
		Kind      string
		SizeBytes int `json:"size_bytes"`
	}
	// The blob is larger than one response: its size and both ends.
	require.NoError(t, lc.call("read_blob", `{"blob_id":"`+run.LogsBlob+`","mode":"sample_head","max_bytes":1000}`, &blob))
	assert.Equal(t, want.Len(), blob.SizeBytes)
	assert.Equal(t, "text/plain", blob.Kind)
	assert.Equal(t, want.String()[:1000], blob.Content)
	require.NoError(t, lc.call("read_blob", `{"blob_id":"`+run.LogsBlob+`","mode":"sample_tail","max_bytes":1000}`, &blob))
	assert.Equal(t, want.String()[want.Len()-1000:], blob.Content)
}

// Every run method answers RUN_NOT_FOUND for another identity's run, as
// for an unknown one, and list_runs shows only the caller's runs.
func TestRunsBelongToTheirIdentity(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	tokens := map[string]string{}
	var idents strings.Builder
	idents.WriteString("identities:\n")
	for _, name := range []string{"alice", "bob"} {
		token, hash := newToken(t)
		tokens[name] = token
		fmt.Fprintf(&idents, "  - name: %s\n    class: service\n    tokens: [%s]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n", name, hash)
	}
	authFile := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.WriteFile(authFile, []byte(idents.String()), 0o600))
	g := startGateway(t, "--auth-file", authFile, "--sandbox-workers", "1")
	alice := dialLive(t, g.addrs["tcp"], nil, tokens["alice"])
	bob := dialLive(t, g.addrs["tcp"], nil, tokens["bob"])
	var run liveRunObject
	require.NoError(t, alice.call("run_code", chattyParams(1, 0, ""), &run))
	for _, m := range []string{"get_run", "watch_run", "cancel_run"} {
		err := bob.call(m, `{"run_id":"`+run.RunID+`"}`, nil)
		requireCode(t, err, "RUN_NOT_FOUND", m)
		err = alice.call(m, `{"run_id":"run_0123456789abcdef"}`, nil)
		requireCode(t, err, "RUN_NOT_FOUND", m)
	}
	var page struct {
		Runs []runRef `json:"runs"`
	}
	require.NoError(t, bob.call("list_runs", `{}`, &page))
	assert.Empty(t, page.Runs)
	require.NoError(t, alice.call("list_runs", `{}`, &page))
	require.Len(t, page.Runs, 1)
	assert.Equal(t, run.RunID, page.Runs[0].RunID)
}

func requireCode(t *testing.T, err error, code, context string) {
	t.Helper()
	var e *transport.Error
	require.True(t, errors.As(err, &e), "%s: %v", context, err)
	assert.Equal(t, code, e.EffectiveCode(), "%s: %v", context, e)
	assert.EqualValues(t, -32602, e.Code, context)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

// postSSE posts a single call asking for server-sent events and returns
// the content type and the events.
func postSSE(t *testing.T, url, body string) (string, []sseEvent) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var evs []sseEvent
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			evs = append(evs, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	require.NoError(t, sc.Err())
	return resp.Header.Get("Content-Type"), evs
}

// runEventsOfSSE checks that the events are run_event notifications
// followed by one response, and returns both.
func runEventsOfSSE(t *testing.T, evs []sseEvent) ([]runEvent, json.RawMessage) {
	t.Helper()
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	require.Equal(t, "response", last.name)
	var out []runEvent
	for _, e := range evs[:len(evs)-1] {
		require.Equal(t, "run_event", e.name)
		var n struct {
			Method string
			Params runEvent
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &n))
		require.Equal(t, "run_event", n.Method)
		out = append(out, n.Params)
	}
	var resp struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(last.data), &resp))
	require.Empty(t, resp.Error)
	return out, resp.Result
}

// Over HTTP, stream and watch_run answer as server-sent events when the
// request accepts them, run_event first and the response last; without
// the header, and in a batch, they are -32602. async, get_run, cancel_run
// and list_runs work as on the framed transport.
func TestLiveRunsOverHTTP(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "2")
	url := "http://" + g.addrs["http"] + "/rpc"
	c := rpcClient{t, url}
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":"h-1","method":"` + method + `","params":` + params + `}`
	}

	ct, evs := postSSE(t, url, call("run_code", chattyParams(50, 0, `,"stream":true`)))
	assert.Equal(t, "text/event-stream", ct)
	events, result := runEventsOfSSE(t, evs)
	assert.Equal(t, expectedLines(50), requireWellFormed(t, events, "h-1"))
	var run liveRunObject
	require.NoError(t, json.Unmarshal(result, &run))
	assert.Equal(t, "completed", run.Status)

	_, evs = postSSE(t, url, call("watch_run", `{"run_id":"`+run.RunID+`","after_seq":2}`))
	watched, _ := runEventsOfSSE(t, evs)
	assert.Equal(t, events[2:], watched)

	// A call that sends no event is answered as plain JSON.
	ct, evs = postSSE(t, url, call("list_runs", `{}`))
	assert.Equal(t, "application/json", ct)
	assert.Len(t, evs, 0)

	_, code := c.call("run_code", chattyParams(1, 0, `,"stream":true`))
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", code)
	_, code = c.call("watch_run", `{"run_id":"`+run.RunID+`"}`)
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", code)
	_, evs = postSSE(t, url, "["+call("watch_run", `{"run_id":"`+run.RunID+`"}`)+"]")
	require.Len(t, evs, 0, "a batch is answered as JSON")

	res, code := c.call("run_code", chattyParams(1000, 0.05, `,"async":true`))
	require.Empty(t, code)
	var ref runRef
	require.NoError(t, json.Unmarshal(res, &ref))
	assert.Equal(t, "running", ref.Status)
	res, code = c.call("get_run", `{"run_id":"`+ref.RunID+`"}`)
	require.Empty(t, code)
	assert.Contains(t, string(res), `"status":"running"`)
	res, code = c.call("cancel_run", `{"run_id":"`+ref.RunID+`"}`)
	require.Empty(t, code)
	assert.Contains(t, string(res), `"status":"failed"`)
	res, code = c.call("list_runs", `{"limit":1}`)
	require.Empty(t, code)
	var page struct {
		Runs       []runRef `json:"runs"`
		NextCursor string   `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal(res, &page))
	require.Len(t, page.Runs, 1)
	assert.Equal(t, ref.RunID, page.Runs[0].RunID, "newest first")
	assert.NotEmpty(t, page.NextCursor)
}

// Bad params of every run method, and of the new execution flags, are
// -32602 with the parameter named.
func TestRunMethodsBadParams(t *testing.T) {
	g := startGateway(t, "--sandbox-workers", "1")
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	for _, tc := range []struct{ method, params string }{
		{"get_run", `{}`},
		{"get_run", `{"run_id":5}`},
		{"get_run", `{"run_id":"run_0123456789abcdef","wait_ms":60001}`},
		{"get_run", `{"run_id":"run_0123456789abcdef","wait_ms":-1}`},
		{"get_run", `{"run_id":"run_0123456789abcdef","extra":1}`},
		{"watch_run", `{"run_id":"run_0123456789abcdef","after_seq":-1}`},
		{"watch_run", `{"run_id":"run_0123456789abcdef","after_seq":"3"}`},
		{"cancel_run", `{"run_id":""}`},
		{"list_runs", `{"status":"done"}`},
		{"list_runs", `{"limit":0}`},
		{"list_runs", `{"limit":101}`},
		{"list_runs", `{"cursor":"not-a-cursor"}`},
		{"run_code", `{"language":"python","code":"def main(a): pass","stream":true,"async":true}`},
		{"run_code", `{"language":"python","code":"def main(a): pass","stream":"yes"}`},
		{"run_code", `{"language":"python","code":"def main(a): pass","async":1}`},
		{"execute_skill", `{"name":"acme.math.add","stream":true,"async":true}`},
	} {
		_, code := c.call(tc.method, tc.params)
		assert.Equal(t, "JSONRPC_INVALID_PARAMS", code, "%s %s", tc.method, tc.params)
	}
	for _, m := range []string{"get_run", "watch_run", "cancel_run"} {
		_, code := c.call(m, `{"run_id":"run_0123456789abcdef"}`)
		assert.Equal(t, "RUN_NOT_FOUND", code, m)
	}
}

// The CLI: call --stream prints the events to stderr and the result to
// stdout, Ctrl-C cancels the run; runs list, get, watch and cancel.
func TestRunsCLI(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1")
	addr := g.addrs["tcp"]
	out, stderr, code := runCLI(t, "call", "--addr", addr, "--stream", "run_code", chattyParams(3, 0, ""))
	require.Equal(t, 0, code, stderr)
	var run liveRunObject
	require.NoError(t, json.Unmarshal([]byte(out), &run))
	require.Equal(t, "completed", run.Status)
	var evs []runEvent
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var ev runEvent
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		evs = append(evs, ev)
	}
	assert.Equal(t, expectedLines(3), requireWellFormed(t, evs, "cl-2"))

	out, _, code = runCLI(t, "runs", "list", "--addr", addr, "--limit", "5")
	require.Equal(t, 0, code)
	assert.Contains(t, out, run.RunID)
	out, _, code = runCLI(t, "runs", "get", "--addr", addr, run.RunID)
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"completed"`)
	_, stderr, code = runCLI(t, "runs", "watch", "--addr", addr, "--after", "1", run.RunID)
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stderr, `{"run_id":"`+run.RunID+`","request_id":"cl-2","seq":2,`), stderr)
	out, _, code = runCLI(t, "runs", "cancel", "--addr", addr, run.RunID)
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"completed"`)
	_, stderr, code = runCLI(t, "runs", "get", "--addr", addr, "run_0123456789abcdef")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "RUN_NOT_FOUND")

	// Ctrl-C while a streamed run goes on cancels it.
	cmd := exec.Command(binary, "call", "--addr", addr, "--stream", "run_code", chattyParams(1000, 0.05, ""))
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(errPipe)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"type":"log"`) {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	_, _ = io.Copy(io.Discard, errPipe)
	require.NoError(t, cmd.Wait())
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &run))
	assert.Equal(t, "failed", run.Status)
	require.NotNil(t, run.Error)
	assert.Equal(t, "CANCELLED", run.Error.Type)
}
