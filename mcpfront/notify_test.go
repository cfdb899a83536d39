//lint:file-ignore SA1019 MCP logging (notifications/message, logging/setLevel) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions, which the issue requires.

package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

// testTimeout is a safety net for one test's calls, never a measure.
const testTimeout = 2 * time.Minute

// stepsCode reports progress n times, writing a line to stdout and one to
// stderr (runtime.log) each step; the pauses outlast the run events'
// coalescing, so every report is an event of its own.
const stepsCode = `import time, runtime
def main(args):
    n = args["n"]
    for i in range(n):
        print("out %d" % i)
        runtime.log.warning("err %d" % i)
        runtime.progress(i + 1, n, "step %d" % (i + 1))
        time.sleep(0.15)
    return {"done": n}
`

// testUIDBase keeps this package's sandboxes apart from other tests'.
const testUIDBase = 1_000_000_000 + 91*65536

// realRunner starts a sandbox runner, or skips where this machine cannot
// isolate code (unless CI demands that it can).
func realRunner(t *testing.T) *sandbox.Runner {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.Workers, cfg.WarmPool, cfg.UIDBase = 2, 0, testUIDBase
	if err := sandbox.CheckIsolation(cfg); err != nil {
		if os.Getenv("SKILLGATE_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("isolation unavailable: %v", err)
		}
		t.Skipf("isolation unavailable: %v", err)
	}
	r, err := sandbox.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// writeStepsSkill writes the action skill acme.steps.run running stepsCode.
func writeStepsSkill(t *testing.T) string {
	dir := t.TempDir()
	p := filepath.Join(dir, "steps")
	require.NoError(t, os.MkdirAll(filepath.Join(p, "code"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p, "skill.toml"), []byte("name = \"acme.steps.run\"\nversion = \"1.0.0\"\n"+
		"description = \"Reports progress.\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(p, "SKILL.md"), []byte("---\nname: Steps\nshort_description: Steps.\n---\nSteps.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(p, "code", "main.py"), []byte(stepsCode), 0o644))
	return dir
}

// notes collects what the client is told while a call runs.
type notes struct {
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
}

func (n *notes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			n.mu.Lock()
			n.progress = append(n.progress, r.Params)
			n.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			n.mu.Lock()
			n.logs = append(n.logs, r.Params)
			n.mu.Unlock()
		},
	}
}

func (n *notes) take() ([]*mcp.ProgressNotificationParams, []*mcp.LoggingMessageParams) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, l := n.progress, n.logs
	n.progress, n.logs = nil, nil
	return p, l
}

func (f *fixture) connectWith(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.http.URL + "/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callSteps(t *testing.T, cs *mcp.ClientSession, n int, token any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	p := &mcp.CallToolParams{Name: "acme.steps.run", Arguments: map[string]any{"n": n}}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, p)
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkProgress asserts reports of steps out of n: growing, each with its
// own message, the last one complete.
func checkProgress(t *testing.T, got []*mcp.ProgressNotificationParams, token any, n int) {
	t.Helper()
	require.NotEmpty(t, got, "no progress notifications")
	last := 0.0
	for _, p := range got {
		assert.Equal(t, token, p.ProgressToken)
		assert.Greater(t, p.Progress, last, "progress grows with every notification")
		last = p.Progress
		assert.EqualValues(t, n, p.Total)
		assert.Equal(t, "step "+strconv.Itoa(int(p.Progress)), p.Message)
	}
	assert.EqualValues(t, n, last, "the last report completes the work")
}

func logText(logs []*mcp.LoggingMessageParams) string {
	var b strings.Builder
	for _, l := range logs {
		s, _ := l.Data.(string)
		b.WriteString(s)
	}
	return b.String()
}

// Over Streamable HTTP: a tools/call with a progressToken gets the run's
// progress reports in order; log lines arrive once the client has set a
// level, filtered by it.
func TestProgressAndLogsHTTP(t *testing.T) {
	f := newRunnerFixture(t, writeStepsSkill(t), Options{}, realRunner(t))
	var n notes
	cs := f.connectWith(t, n.options())
	const steps = 4

	callSteps(t, cs, steps, nil)
	progress, logs := n.take()
	assert.Empty(t, progress, "no progressToken, no progress")
	assert.Empty(t, logs, "no log messages before the client sets a level")

	callSteps(t, cs, steps, "tok-1")
	progress, logs = n.take()
	checkProgress(t, progress, "tok-1", steps)
	assert.Empty(t, logs)

	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}))
	callSteps(t, cs, steps, 7)
	progress, logs = n.take()
	checkProgress(t, progress, float64(7), steps) // a number token comes back as a JSON number
	text := logText(logs)
	for i := range steps {
		assert.Contains(t, text, fmt.Sprintf("out %d\n", i))
		assert.Contains(t, text, fmt.Sprintf("err %d\n", i))
	}
	for _, l := range logs {
		assert.Contains(t, []mcp.LoggingLevel{levelStdout, levelStderr}, l.Level)
		assert.Equal(t, "acme.steps.run@1.0.0", l.Logger)
	}

	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "error"}))
	callSteps(t, cs, steps, nil)
	_, logs = n.take()
	assert.Empty(t, logs, "nothing below the level set")
}

// run_code, the protocol tool, streams the same way.
func TestRunCodeProgress(t *testing.T) {
	f := newRunnerFixture(t, writeSkills(t, 1), Options{Tools: ToolsProtocol}, realRunner(t))
	var n notes
	cs := f.connectWith(t, n.options())
	p := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": stepsCode, "args": map[string]any{"n": 3}}}
	p.SetProgressToken("rc")
	res, err := cs.CallTool(t.Context(), p)
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	progress, _ := n.take()
	checkProgress(t, progress, "rc", 3)
}

// A client that cancels a streamed tools/call stops its run: no process
// of the sandbox is left, and the next call is served.
func TestCancelStreamedRun(t *testing.T) {
	f := newRunnerFixture(t, writeStepsSkill(t), Options{}, realRunner(t))
	started := make(chan struct{}, 100)
	cs := f.connectWith(t, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { started <- struct{}{} },
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "acme.steps.run", Arguments: map[string]any{"n": 100000}}
		p.SetProgressToken("c")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("no progress before the deadline")
	}
	if os.Geteuid() == 0 {
		require.NotEmpty(t, sandboxProcesses(testUIDBase), "the run's processes are visible")
	}
	cancel()
	require.Error(t, <-done)
	waitGone(t, testUIDBase)
	callSteps(t, cs, 1, nil)
}

// waitGone waits, a bounded number of times, until no process runs under
// the sandbox's uid range (root mode maps each sandbox there).
func waitGone(t *testing.T, base uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		return // rootless sandboxes run as this user: nothing to tell apart
	}
	var left []string
	for range 300 {
		if left = sandboxProcesses(base); len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("sandbox processes left: %v", left)
}

func sandboxProcesses(base uint32) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/status")
	var left []string
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// The Runner's sandbox template lives as long as the Runner; it
		// runs no run's code.
		if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline")); strings.Contains(string(cmd), "__skillgate_sandbox_template__") {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if uid, err := strconv.ParseUint(f[1], 10, 32); err == nil && uid >= uint64(base) && uid < uint64(base)+65536 {
					left = append(left, filepath.Dir(p))
				}
			}
		}
	}
	return left
}

// Run events become notifications: progress only with a token and only
// when it grows (the protocol wants it to increase with every
// notification), log lines at their stream's level, named by the run.
func TestRunEventsToNotifications(t *testing.T) {
	var progress []*mcp.ProgressNotificationParams
	var logs []*mcp.LoggingMessageParams
	n := &runEvents{token: "t",
		progress: func(_ context.Context, p *mcp.ProgressNotificationParams) error {
			progress = append(progress, p)
			return nil
		},
		message: func(_ context.Context, m *mcp.LoggingMessageParams) error { logs = append(logs, m); return nil },
	}
	ctx := t.Context()
	for _, ev := range []string{
		`{"run_id":"r","seq":1,"type":"started","what":"acme.a.b@1.0.0","queued_ms":0}`,
		`{"run_id":"r","seq":2,"type":"progress","progress":1,"total":4,"message":"one"}`,
		`{"run_id":"r","seq":3,"type":"log","stream":"stdout","text":"out\n"}`,
		`{"run_id":"r","seq":4,"type":"progress","progress":3,"total":4,"message":null}`,
		`{"run_id":"r","seq":5,"type":"progress","progress":2,"total":4}`,
		`{"run_id":"r","seq":6,"type":"progress","progress":3,"total":null}`,
		`{"run_id":"r","seq":7,"type":"log","stream":"stderr","text":"err\n"}`,
		`{"run_id":"r","seq":8,"type":"log","stream":"log","text":"both\n"}`,
		`{"run_id":"r","seq":9,"type":"gap","from_seq":9,"to_seq":9}`,
		`{"run_id":"r","seq":10,"type":"progress","progress":4,"total":null}`,
		`{"run_id":"r","seq":11,"type":"finished","status":"completed"}`,
		`not json`,
	} {
		require.NoError(t, n.notify(ctx, "run_event", eventOf(ev)))
	}
	require.NoError(t, n.notify(ctx, "other", eventOf(`{"type":"progress","progress":9}`)))
	assert.Equal(t, []*mcp.ProgressNotificationParams{
		{ProgressToken: "t", Progress: 1, Total: 4, Message: "one"},
		{ProgressToken: "t", Progress: 3, Total: 4},
		{ProgressToken: "t", Progress: 4},
	}, progress)
	assert.Equal(t, []*mcp.LoggingMessageParams{
		{Level: "info", Logger: "acme.a.b@1.0.0", Data: "out\n"},
		{Level: "warning", Logger: "acme.a.b@1.0.0", Data: "err\n"},
		{Level: "info", Logger: "acme.a.b@1.0.0", Data: "both\n"},
	}, logs)

	progress = nil
	n = &runEvents{progress: n.progress, message: n.message}
	require.NoError(t, n.notify(ctx, "run_event", eventOf(`{"type":"progress","progress":1}`)))
	assert.Empty(t, progress, "no token, no progress")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, n.notify(canceled, "run_event", eventOf(`{"type":"log","text":"x"}`)), context.Canceled,
		"only the end of the call ends the stream")
}

func TestWithStream(t *testing.T) {
	assert.JSONEq(t, `{"code":"x","stream":true}`, string(withStream(json.RawMessage(`{"code":"x","stream":false}`))))
	for _, raw := range []string{`[1]`, `null`, `"s"`, ``} {
		assert.Equal(t, raw, string(withStream(json.RawMessage(raw))), "not an object: left for the method to refuse")
	}
}
