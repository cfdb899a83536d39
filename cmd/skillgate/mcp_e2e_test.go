//lint:file-ignore SA1019 MCP logging (notifications/message, logging/setLevel) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions, which the issue requires.

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testpki"
	"github.com/skillgate/skillgate/sandbox"
)

// mcpTimeout is a safety net for one MCP test's calls, never a measure.
const mcpTimeout = 2 * time.Minute

func mcpContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), mcpTimeout)
	t.Cleanup(cancel)
	return ctx
}

// exampleSkills copies the example skill packages into a temp folder.
func exampleSkills(t testing.TB) string {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../examples/skills")))
	return dir
}

// connectStdio launches `skillgate mcp` as a desktop host would and
// connects the official SDK client to it.
func connectStdio(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cs, _ := startStdio(t, opts, args...)
	return cs
}

// startStdio is connectStdio that also returns the process, for signals.
func startStdio(t *testing.T, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp", "--log-level", "warn"}, args...)...)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(mcpContext(t), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

// bearerTransport adds a token to every request, as a remote MCP client
// configured with one does.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func connectHTTP(t testing.TB, url, token string, base http.RoundTripper, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: base}
	if token != "" {
		hc.Transport = bearerTransport{token, base}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(mcpContext(t), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(mcpContext(t), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
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

func structured(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(b)
}

// The official SDK client launches `skillgate mcp` over stdio and sees the
// skills as tools, resources and prompts; runs go through the sandbox.
func TestMCPStdio(t *testing.T) {
	requireSandbox(t)
	dir := exampleSkills(t)
	typed := filepath.Join(dir, "acme.typed")
	require.NoError(t, os.MkdirAll(filepath.Join(typed, "code"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(typed, "schema"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(typed, "skill.toml"), []byte("name = \"acme.typed\"\nversion = \"1.0.0\"\n"+
		"description = \"Doubles n.\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n"+
		"export = \"main\"\nargs_schema = \"schema/args.json\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(typed, "SKILL.md"), []byte("---\nname: Typed\nshort_description: Doubles.\n---\nDoubles n.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(typed, "code", "main.py"), []byte("def main(args):\n    return {'twice': 2 * args['n']}\n"), 0o644))
	const argsSchema = `{"type":"object","properties":{"n":{"type":"integer","maximum":100}},"required":["n"],"additionalProperties":false}`
	require.NoError(t, os.WriteFile(filepath.Join(typed, "schema", "args.json"), []byte(argsSchema), 0o644))
	cs := connectStdio(t, nil, "--skills-dir", dir, "--sandbox-workers", "2")
	ctx := mcpContext(t)

	init := cs.InitializeResult()
	assert.Equal(t, "skillgate", init.ServerInfo.Name)

	names := toolNames(t, cs)
	for _, want := range []string{"acme.math.add", "acme.text.wordcount", "list_skills", "describe_skill",
		"read_skill_file", "run_code", "create_blob", "read_blob"} {
		assert.Contains(t, names, want)
	}
	assert.NotContains(t, names, "acme.style.guide", "an instruction skill is a prompt, not a tool")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.math.add", Arguments: map[string]any{"a": 2, "b": 40}})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	assert.JSONEq(t, `{"sum":42,"count":2}`, structured(t, res))
	assert.Contains(t, textOf(res), `"sum"`)

	// args_schema is the tool's inputSchema and is enforced before any run.
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tl := range tools.Tools {
		switch tl.Name {
		case "acme.typed":
			b, _ := json.Marshal(tl.InputSchema)
			assert.JSONEq(t, argsSchema, string(b))
		case "acme.math.add":
			b, _ := json.Marshal(tl.InputSchema)
			assert.JSONEq(t, `{"type":"object"}`, string(b))
			assert.Contains(t, tl.Description, "Add two numbers")
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.typed", Arguments: map[string]any{"n": 21}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"twice":42}`, structured(t, res))
	// Args that fail it are a failed run (VALIDATION_ERROR), which MCP
	// answers as a tool error naming each violation.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.typed", Arguments: map[string]any{"n": 101, "m": 1}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "VALIDATION_ERROR")
	assert.Contains(t, textOf(res), "/n")
	assert.Contains(t, textOf(res), "/m")

	// A run that fails answers isError with its error type.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "python", "code": "def main(args):\n    raise ValueError('boom')\n"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "ValueError")

	// run_code takes bash too: an Agent Skill's bundled script, run from
	// its folder, its output file an output blob.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "bash", "mount_skills": []string{"csv-report"},
		"code": "printf 'a,b\\n1,\\n' > /tmp/in.csv && cd /skills/csv-report && python3 scripts/summarize.py /tmp/in.csv /workspace/outputs/s.json"}})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	assert.Contains(t, structured(t, res), `"exit_code":0`)
	assert.Contains(t, structured(t, res), `"s.json":"blob:`)

	// Output blobs come back as resource links, readable as blob:// resources.
	blob, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_blob", Arguments: map[string]any{"content": "the cat saw the cat"}})
	require.NoError(t, err)
	var created struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(structured(t, blob)), &created))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.text.wordcount", Arguments: map[string]any{"text_blob": created.BlobID}})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	require.NotNil(t, link, "the wordcount skill writes a blob")
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	require.Len(t, rr.Contents, 1)
	assert.Contains(t, rr.Contents[0].Text+string(rr.Contents[0].Blob), "cat")

	// Protocol problems are JSON-RPC errors.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.nope", Arguments: map[string]any{}})
	requireRPCError(t, err, jsonrpc.CodeInvalidParams)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_skill", Arguments: map[string]any{"name": "acme.missing"}})
	we := requireRPCError(t, err, jsonrpc.CodeInvalidParams)
	assert.Contains(t, string(we.Data), `"string_code":"SKILL_NOT_FOUND"`, "the Skills Protocol's error data")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_blob", Arguments: map[string]any{"mode": "full"}})
	we = requireRPCError(t, err, jsonrpc.CodeInvalidParams)
	assert.Contains(t, string(we.Data), "blob_id")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "acme.math.add", Arguments: []int{1}})
	require.Error(t, err, "arguments must be an object")

	// Skill files are resources, read with their MIME type.
	lr, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	uris := map[string]string{}
	for _, r := range lr.Resources {
		uris[r.URI] = r.MIMEType
	}
	assert.Equal(t, "text/markdown", uris["skill://acme.math.add/1.1.0/SKILL.md"])
	assert.Equal(t, "text/x-python", uris["skill://acme.math.add/1.1.0/code/main.py"])
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme.math.add/1.1.0/code/main.py"})
	require.NoError(t, err)
	assert.Contains(t, rr.Contents[0].Text, "def main")
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme.math.add/9.9.9/SKILL.md"})
	require.Error(t, err)

	// Instruction skills are prompts.
	lp, err := cs.ListPrompts(ctx, nil)
	require.NoError(t, err)
	var prompts []string
	for _, p := range lp.Prompts {
		prompts = append(prompts, p.Name)
	}
	assert.Contains(t, prompts, "acme.style.guide")
	assert.NotContains(t, prompts, "acme.math.add")
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "acme.style.guide"})
	require.NoError(t, err)
	require.Len(t, gp.Messages, 1)
	assert.NotEmpty(t, gp.Messages[0].Content.(*mcp.TextContent).Text)
}

func requireRPCError(t *testing.T, err error, code int64) *jsonrpc.Error {
	t.Helper()
	require.Error(t, err)
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we, "%v", err)
	assert.Equal(t, code, we.Code, "%v", err)
	return we
}

// --mcp-tools protocol offers no per-skill tools; a reload that adds a
// skill tells the client the lists changed.
func TestMCPStdioToolsModeAndListChanged(t *testing.T) {
	dir := t.TempDir()
	changed := make(chan string, 10)
	opts := &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- "resources" },
	}
	cs := connectStdio(t, opts, "--skills-dir", dir, "--sandbox-workers", "0")
	names := toolNames(t, cs)
	assert.Contains(t, names, "run_code")

	skill := filepath.Join(dir, "hello")
	require.NoError(t, os.MkdirAll(filepath.Join(skill, "code"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: Hello\nshort_description: Greets.\n---\nGreets.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "code", "main.py"), []byte("def main(args):\n    return {'hi': 1}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "skill.toml"), []byte("name = \"acme.hello\"\nversion = \"1.0.0\"\n"+
		"description = \"Says hello.\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n"), 0o644))
	got := map[string]bool{}
	timeout := time.After(mcpTimeout)
	for !got["tools"] || !got["resources"] {
		select {
		case k := <-changed:
			got[k] = true
		case <-timeout:
			t.Fatalf("no list_changed after the reload; got %v", got)
		}
	}
	assert.Contains(t, toolNames(t, cs), "acme.hello")

	cs2 := connectStdio(t, nil, "--skills-dir", dir, "--sandbox-workers", "0", "--mcp-tools", "protocol")
	names = toolNames(t, cs2)
	assert.NotContains(t, names, "acme.hello")
	assert.Contains(t, names, "list_skills")

	_, stderr, code := runCLI(t, "mcp", "--mcp-tools", "all")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--mcp-tools")
}

// writeAuthFile writes identities "ci" (everything) and "docs" (only
// list_skills and execute_skill in namespace "other") and returns their
// tokens.
func writeAuthFile(t *testing.T) (path, full, limited string) {
	t.Helper()
	full, fullHash := newToken(t)
	limited, limitedHash := newToken(t)
	path = filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte("identities:\n"+
		"  - name: ci\n    class: service\n    tokens: ["+fullHash+"]\n    methods: [\"*\"]\n    namespaces: [\"*\"]\n"+
		"  - name: docs\n    class: service\n    tokens: ["+limitedHash+"]\n    methods: [list_skills, execute_skill]\n    namespaces: [other]\n"), 0o600))
	return path, full, limited
}

// Over Streamable HTTP at /mcp, bearer tokens map to the auth file's
// identities: no token or a wrong one is refused, and an identity sees
// only what its methods and namespaces reach.
func TestMCPHTTPAuth(t *testing.T) {
	requireSandbox(t)
	authFile, full, limited := writeAuthFile(t)
	g := startGateway(t, "--auth-file", authFile, "--skills-dir", exampleSkills(t), "--sandbox-workers", "1")
	url := "http://" + g.addrs["http"] + "/mcp"

	_, err := connectHTTP(t, url, "", nil, nil)
	require.Error(t, err, "no token")
	_, err = connectHTTP(t, url, "sgt_wrong", nil, nil)
	require.Error(t, err, "wrong token")
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")

	cs, err := connectHTTP(t, url, full, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, toolNames(t, cs), "acme.math.add")
	res, err := cs.CallTool(mcpContext(t), &mcp.CallToolParams{Name: "acme.math.add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	assert.JSONEq(t, `{"sum":3,"count":2}`, structured(t, res))

	docs, err := connectHTTP(t, url, limited, nil, nil)
	require.NoError(t, err)
	names := toolNames(t, docs)
	assert.Equal(t, []string{"list_skills"}, names, "no skill of namespace other, and no method but list_skills")
	_, err = docs.CallTool(mcpContext(t), &mcp.CallToolParams{Name: "acme.math.add", Arguments: map[string]any{"a": 1, "b": 2}})
	requireRPCError(t, err, jsonrpc.CodeInvalidParams)
	_, err = docs.CallTool(mcpContext(t), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": "x"}})
	requireRPCError(t, err, jsonrpc.CodeInvalidParams)
	lr, err := docs.ListResources(mcpContext(t), nil)
	require.NoError(t, err)
	assert.Empty(t, lr.Resources)
	_, err = docs.ReadResource(mcpContext(t), &mcp.ReadResourceParams{URI: "skill://acme.math.add/1.1.0/SKILL.md"})
	require.Error(t, err)
	lp, err := docs.ListPrompts(mcpContext(t), nil)
	require.NoError(t, err)
	assert.Empty(t, lp.Prompts)

	metrics := scrape(t, "http://"+g.addrs["metrics"]+"/metrics")
	assert.True(t, strings.Contains(metrics, `skillgate_rpc_requests_total{front="mcp",method="execute_skill",outcome="ok"} 1`),
		"the run is counted under front=mcp")
	assert.True(t, strings.Contains(metrics, `skillgate_auth_failures_total{front="mcp",reason="invalid"}`),
		"the refused tokens are counted")
}

// /mcp applies the Origin and Host rules of /rpc: a browser page of
// another origin, or a DNS-rebinding host name, is refused.
func TestMCPHTTPOriginAndHost(t *testing.T) {
	g := startGateway(t, "--sandbox-workers", "0")
	url := "http://" + g.addrs["http"] + "/mcp"
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, set := range map[string]func(*http.Request){
		"origin": func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
		"host":   func(r *http.Request) { r.Host = "evil.example" },
	} {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	cs, err := connectHTTP(t, url, "", nil, nil)
	require.NoError(t, err, "open mode on loopback: no token needed")
	assert.Contains(t, toolNames(t, cs), "list_skills")
}

// --http-tls-cert serves /mcp (and /rpc) over HTTPS.
func TestMCPHTTPS(t *testing.T) {
	ca := testpki.NewCA("test")
	dir := t.TempDir()
	cert, key := testpki.WritePEM(dir, "server", ca.Server())
	g := startGateway(t, "--sandbox-workers", "0", "--http-tls-cert", cert, "--http-tls-key", key)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := connectHTTP(t, "https://"+g.addrs["http"]+"/mcp", "", tr, nil)
	require.NoError(t, err)
	assert.True(t, slices.Contains(toolNames(t, cs), "describe_skill"))

	_, err = connectHTTP(t, "http://"+g.addrs["http"]+"/mcp", "", nil, nil)
	require.Error(t, err, "plain HTTP to an HTTPS listener")
}

// A SIGHUP reload reaches MCP clients of the HTTP front door too.
func TestMCPHTTPReload(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, "--skills-dir", dir, "--watch-skills=false", "--sandbox-workers", "0")
	changed := make(chan struct{}, 10)
	cs, err := connectHTTP(t, "http://"+g.addrs["http"]+"/mcp", "", nil, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	})
	require.NoError(t, err)
	skill := filepath.Join(dir, "hup")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "skill.toml"), []byte("name = \"acme.hup.test\"\nversion = \"1.0.0\"\n"+
		"description = \"Appears on SIGHUP.\"\nkind = \"instruction\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: Hup\nshort_description: Hup.\n---\nHup body.\n"), 0o644))
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGHUP))
	select {
	case <-changed:
	case <-time.After(mcpTimeout):
		t.Fatal("no prompts/list_changed after SIGHUP")
	}
	gp, err := cs.GetPrompt(mcpContext(t), &mcp.GetPromptParams{Name: "acme.hup.test"})
	require.NoError(t, err)
	assert.Contains(t, gp.Messages[0].Content.(*mcp.TextContent).Text, "Hup body.")
}

// sandboxRunning reads the gateway's gauge of runs holding a worker.
func sandboxRunning(t *testing.T, metricsAddr string) string {
	for _, line := range strings.Split(scrape(t, "http://"+metricsAddr+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, "skillgate_sandbox_running "); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond a bounded number of times; the bound is a safety net.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 600 {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gave up waiting: %s", what)
}

// cancelSleepingMCPRun starts a run_code that sleeps through cs, waits
// until the gateway at metricsAddr runs it, then cancels the call (the
// SDK sends notifications/cancelled); the call ends with an error.
func cancelSleepingMCPRun(t *testing.T, cs *mcp.ClientSession, metricsAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(mcpContext(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
			"language": "python", "code": "import time\ndef main(args):\n    time.sleep(300)\n", "timeout_ms": 600000}})
		done <- err
	}()
	waitFor(t, "the run to start", func() bool { return sandboxRunning(t, metricsAddr) == "1" })
	cancel()
	require.Error(t, <-done)
}

// A client that cancels a tools/call (notifications/cancelled) stops the
// run: its sandbox is torn down and its worker freed at once.
func TestMCPCancelStopsRun(t *testing.T) {
	requireSandbox(t)
	g := startGateway(t, "--sandbox-workers", "1", "--sandbox-warm-pool", "0")
	cs, err := connectHTTP(t, "http://"+g.addrs["http"]+"/mcp", "", nil, nil)
	require.NoError(t, err)
	cancelSleepingMCPRun(t, cs, g.addrs["metrics"])
	waitFor(t, "the canceled run to free its worker", func() bool { return sandboxRunning(t, g.addrs["metrics"]) == "0" })

	res, err := cs.CallTool(mcpContext(t), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "python", "code": "def main(args):\n    return {'ok': 1}\n"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, textOf(res))
}

// BenchmarkMCPToolsCallVsRPC runs the same trivial skill through the real
// sandbox as an MCP tools/call over Streamable HTTP and as execute_skill
// over POST /rpc, against one gateway: the ratio is the MCP front door's
// cost on a real run.
func BenchmarkMCPToolsCallVsRPC(b *testing.B) {
	if err := sandbox.CheckIsolation(sandbox.DefaultConfig()); err != nil {
		b.Skipf("isolation unavailable: %v", err)
	}
	g := startGateway(b, "--skills-dir", exampleSkills(b), "--sandbox-workers", "1")
	cs, err := connectHTTP(b, "http://"+g.addrs["http"]+"/mcp", "", nil, nil)
	require.NoError(b, err)
	b.Run("mcp", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "acme.math.add", Arguments: map[string]any{"a": 1, "b": 2}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"execute_skill","params":{"name":"acme.math.add","args":{"a":1,"b":2}}}`
	b.Run("rpc", func(b *testing.B) {
		for b.Loop() {
			resp, err := http.Post("http://"+g.addrs["http"]+"/rpc", "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var out struct {
				Result struct{ Status string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Result.Status != "completed" {
				b.Fatal(err, out)
			}
			resp.Body.Close()
		}
	})
}

// Over stdio, a tools/call with a progressToken gets the run's progress
// reports in order, and its log lines at the level the request names:
// the SDK's client speaks protocol 2026-07-28 over stdio, where the level
// rides in each request's _meta rather than in logging/setLevel.
func TestMCPStdioProgressAndLogs(t *testing.T) {
	requireSandbox(t)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	var logs []*mcp.LoggingMessageParams
	cs := connectStdio(t, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params)
			mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params)
			mu.Unlock()
		},
	}, "--skills-dir", exampleSkills(t), "--sandbox-workers", "1")
	ctx := mcpContext(t)
	const code = "import time, runtime\ndef main(args):\n    for i in range(3):\n        print('line %d' % i)\n" +
		"        runtime.progress(i + 1, 3, 'step %d' % (i + 1))\n        time.sleep(0.15)\n    return {}\n"
	run := func(token any, level mcp.LoggingLevel) {
		p := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": code}}
		if level != "" {
			p.Meta = mcp.Meta{mcp.MetaKeyLogLevel: level}
		}
		if token != nil {
			p.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, p)
		require.NoError(t, err)
		require.False(t, res.IsError, textOf(res))
	}
	take := func() ([]*mcp.ProgressNotificationParams, []*mcp.LoggingMessageParams) {
		mu.Lock()
		defer mu.Unlock()
		p, l := progress, logs
		progress, logs = nil, nil
		return p, l
	}

	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	run(nil, "")
	p, l := take()
	assert.Empty(t, p, "no progressToken, no progress")
	assert.Empty(t, l, "no log messages without a level")

	run(nil, "error")
	_, l = take()
	assert.Empty(t, l, "nothing below the level")

	run("stdio", "debug")
	p, l = take()
	require.NotEmpty(t, p)
	last := 0.0
	for _, n := range p {
		assert.Equal(t, "stdio", n.ProgressToken)
		assert.Greater(t, n.Progress, last)
		last = n.Progress
		assert.EqualValues(t, 3, n.Total)
	}
	assert.EqualValues(t, 3, last)
	var text strings.Builder
	for _, m := range l {
		s, _ := m.Data.(string)
		text.WriteString(s)
		assert.Equal(t, "run_code", m.Logger)
	}
	assert.Equal(t, "line 0\nline 1\nline 2\n", text.String())
}
