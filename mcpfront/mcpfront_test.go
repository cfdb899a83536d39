//lint:file-ignore SA1019 MCP logging (notifications/message, logging/setLevel) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions, which the issue requires.

package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/httpfront"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) {
	// The sandbox's pid 1 is this test binary re-executed.
	sandbox.MaybeInit()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/fsnotify/fsnotify.(*inotify).readEvents"))
}

// cannedRunner completes every run at once with the same output: the
// front door is under test, not the sandbox.
type cannedRunner struct{}

func (cannedRunner) Run(context.Context, sandbox.Job) (*sandbox.Result, error) {
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{"sum":3}`), Logs: "ok\n"}, nil
}

type fixture struct {
	d    *dispatch.Dispatcher
	reg  *skills.Registry
	http *httptest.Server // /rpc and /mcp
	srv  *Server
}

func newFixture(tb testing.TB, dir string, opts Options) *fixture {
	tb.Helper()
	return newRunnerFixture(tb, dir, opts, cannedRunner{})
}

func newRunnerFixture(tb testing.TB, dir string, opts Options, runner dispatch.Runner) *fixture {
	tb.Helper()
	reg, err := skills.NewRegistry(skills.Options{Dir: dir, Logger: zerolog.Nop()})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = reg.Close() })
	blobs := blob.NewMemStore(blob.MemOptions{})
	tb.Cleanup(func() { _ = blobs.Close() })
	d := dispatch.New(dispatch.Options{Logger: zerolog.Nop(), Skills: reg, Blobs: blobs, Runner: runner,
		Info: dispatch.Info{MaxMessageSize: 1 << 20}})
	opts.Front, opts.Skills, opts.Logger = d.Front(metrics.FrontMCP), reg, zerolog.Nop()
	srv, err := New(opts)
	require.NoError(tb, err)
	front := httpfront.New(d.Front(metrics.FrontHTTP), httpfront.Options{MaxBodyBytes: 1 << 20, MaxResponseBytes: 1 << 20})
	front.Handle("/mcp", srv.HTTPHandler(HTTPOptions{Authenticate: opts.Front.AuthenticateRequest, MaxBodyBytes: 1 << 20}))
	hs := httptest.NewServer(front)
	tb.Cleanup(hs.Close)
	return &fixture{d: d, reg: reg, http: hs, srv: srv}
}

func (f *fixture) connect(tb testing.TB) *mcp.ClientSession {
	tb.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.http.URL + "/mcp", MaxRetries: -1}, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// writeSkills writes n action skills acme.s<i>.run.
func writeSkills(tb testing.TB, n int) string {
	dir := tb.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("s%d", i))
		require.NoError(tb, os.MkdirAll(filepath.Join(p, "code"), 0o755))
		name := fmt.Sprintf("acme.s%d.run", i)
		require.NoError(tb, os.WriteFile(filepath.Join(p, "skill.toml"), []byte("name = \""+name+"\"\nversion = \"1.0.0\"\n"+
			"description = \"Skill "+name+".\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n"), 0o644))
		require.NoError(tb, os.WriteFile(filepath.Join(p, "SKILL.md"), []byte("---\nname: S\nshort_description: S.\n---\nS.\n"), 0o644))
		require.NoError(tb, os.WriteFile(filepath.Join(p, "code", "main.py"), []byte("def main(args):\n    return {}\n"), 0o644))
	}
	return dir
}

func listTools(tb testing.TB, cs *mcp.ClientSession) []string {
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		require.NoError(tb, err)
		names = append(names, tl.Name)
	}
	return names
}

func TestToolsModes(t *testing.T) {
	dir := writeSkills(t, 3)
	for mode, want := range map[string][]string{
		ToolsSkills:   {"acme.s0.run", "acme.s1.run", "acme.s2.run"},
		ToolsProtocol: {"create_blob", "describe_skill", "list_skills", "read_blob", "read_skill_file", "run_code"},
		ToolsBoth: {"acme.s0.run", "acme.s1.run", "acme.s2.run", "create_blob", "describe_skill", "list_skills",
			"read_blob", "read_skill_file", "run_code"},
	} {
		f := newFixture(t, dir, Options{Tools: mode})
		assert.ElementsMatch(t, want, listTools(t, f.connect(t)), mode)
	}
	f := newFixture(t, dir, Options{MaxSkillTools: 2})
	assert.NotContains(t, listTools(t, f.connect(t)), "acme.s0.run", "over the cap: protocol tools only")

	_, err := New(Options{Tools: "all"})
	require.ErrorIs(t, err, ErrBadToolsMode)
}

// A session without an identity (an HTTP endpoint mounted without
// authentication, a stdio server without Options.Identity) is refused.
func TestNoIdentityRefused(t *testing.T) {
	f := newFixture(t, writeSkills(t, 1), Options{})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.srv.SDK().Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, res.Tools, "nothing is visible without an identity")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_skills"})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
}

func TestRPCErrorKeepsTheProtocolData(t *testing.T) {
	e := transport.AppError(dispatch.StringSkillNotFound, "Skill not found.").WithDetails("no skill acme.x")
	var we *jsonrpc.Error
	require.ErrorAs(t, rpcError(e), &we)
	assert.EqualValues(t, e.Code, we.Code)
	assert.Equal(t, "Skill not found.", we.Message)
	assert.Contains(t, string(we.Data), `"string_code":"SKILL_NOT_FOUND"`)
	assert.Contains(t, string(we.Data), "no skill acme.x")
}

func TestBlobArgs(t *testing.T) {
	assert.Equal(t, []string{"blob:a", "blob:b"}, blobArgs(json.RawMessage(`{"x":"blob:b","y":["blob:a","blob:b",3],"z":{"w":"blob:c"},"v":"nope"}`)))
	assert.Empty(t, blobArgs(json.RawMessage(`[1]`)))
	assert.Empty(t, blobArgs(nil))
}

func TestSkillURIAndMIME(t *testing.T) {
	sk := &skills.Skill{Manifest: skills.Manifest{Name: "acme.a.b", Version: "1.0.0"}}
	assert.Equal(t, "skill://acme.a.b/1.0.0/docs/a%20b.md", skillURI(sk, "docs/a b.md"))
	assert.Equal(t, "acme.a.b", skillOfURI("skill://acme.a.b/1.0.0/SKILL.md"))
	assert.Equal(t, "", skillOfURI("blob://x"))
	assert.Equal(t, "text/markdown", mimeType("SKILL.md"))
	assert.Equal(t, "text/x-python", mimeType("code/main.py"))
	assert.Equal(t, "application/json", mimeType("schema/args.json"))
	assert.Equal(t, "application/octet-stream", mimeType("data.unknownext"))
	assert.Equal(t, "blob://3fa9", blobURI("blob:3fa9"))
}

// Benchmarks: the same trivial run through tools/call over Streamable
// HTTP and through execute_skill over POST /rpc, with a runner that
// answers at once so that only the front doors differ; and tools/list of
// 1,000 skill tools.
func BenchmarkToolsCallHTTP(b *testing.B) {
	f := newFixture(b, writeSkills(b, 1), Options{})
	cs := f.connect(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.s0.run", Arguments: map[string]any{"a": 1, "b": 2}})
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecuteSkillRPC(b *testing.B) {
	f := newFixture(b, writeSkills(b, 1), Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"execute_skill","params":{"name":"acme.s0.run","args":{"a":1,"b":2}}}`
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Post(f.http.URL+"/rpc", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var out struct{ Result json.RawMessage }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Result == nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

func BenchmarkToolsList1000(b *testing.B) {
	f := newFixture(b, writeSkills(b, 1000), Options{MaxSkillTools: 2000})
	cs := f.connect(b)
	b.ResetTimer()
	for b.Loop() {
		if n := len(listTools(b, cs)); n != 1006 {
			b.Fatalf("%d tools", n)
		}
	}
}

// eventsRunner reports progress and writes a log line before it
// completes, as a run that streams does.
type eventsRunner struct{}

func (eventsRunner) Run(_ context.Context, job sandbox.Job) (*sandbox.Result, error) {
	total, msg := 2.0, "half"
	if o := job.Observer; o != nil {
		o.Started(0)
		o.Log(sandbox.StreamStdout, []byte("working\n"))
		o.Progress(sandbox.Progress{Done: 1, Total: &total, Message: &msg})
		o.Progress(sandbox.Progress{Done: 2, Total: &total})
	}
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{"sum":3}`), Logs: "working\n"}, nil
}

// BenchmarkToolsCallStreamed is tools/call of a run that reports progress
// and logs, with a progressToken and a log level set: the cost of turning
// run events into MCP notifications, against BenchmarkToolsCallHTTP.
func BenchmarkToolsCallStreamed(b *testing.B) {
	f := newRunnerFixture(b, writeSkills(b, 1), Options{}, eventsRunner{})
	var progress, logs atomic.Int64
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.http.URL + "/mcp", MaxRetries: -1}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = cs.Close() })
	require.NoError(b, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	b.ResetTimer()
	for b.Loop() {
		p := &mcp.CallToolParams{Name: "acme.s0.run", Arguments: map[string]any{"a": 1, "b": 2}}
		p.SetProgressToken("bench")
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(progress.Load())/float64(b.N), "progress/op")
	b.ReportMetric(float64(logs.Load())/float64(b.N), "logs/op")
}
