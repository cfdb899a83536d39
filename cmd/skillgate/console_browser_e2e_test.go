package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run console is tested the way people use it: a real headless
// Chromium against a real gateway whose runs are real sandbox runs. Each
// tab keeps its own token (sessionStorage), so a tab is an identity.

// chromiumPath finds Debian's chromium. Outside CI a machine without it
// skips the browser tests; in CI (CI=true, or SKILLGATE_REQUIRE_BROWSER=1
// as .ci/run sets) its absence fails them, since .ci/setup installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("SKILLGATE_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is not installed; .ci/setup installs it")
	}
	t.Skip("chromium is not installed")
	return ""
}

// browserFor starts a headless Chromium with a fresh profile; it stops
// with the test.
func browserFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	alloc, stop := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900))
	t.Cleanup(stop)
	return alloc
}

// tab is one browser tab on the console, with what it saw go wrong: an
// exception, an error in the console (a Content-Security-Policy
// violation among them), or a request to anywhere but the gateway.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string // http://host:port of the gateway

	mu       sync.Mutex
	problems []string
}

// openTab opens a tab: in a browser of its own when parent is the
// browser's allocator (browserFor), else beside parent's tab, in the same
// browser.
func openTab(t *testing.T, parent context.Context, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, base: base}
	require.NoError(t, chromedp.Do(ctx)) // starts the tab, so that Listen has one
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problem = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				problem += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				problem = "console.error called"
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				problem = "console: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "blob:"+base+"/") {
				problem = "a request outside the gateway: " + u
			}
		}
		if problem != "" {
			tb.mu.Lock()
			tb.problems = append(tb.problems, problem)
			tb.mu.Unlock()
		}
	}))
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		assert.Empty(t, tb.problems, "what the page did wrong")
	})
	return tb
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	require.NoError(tb.t, chromedp.Do(tb.ctx, steps...))
}

// wait polls a JavaScript expression until it is truthy.
func (tb *tab) wait(expr string) {
	tb.t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second)))
	require.NoError(tb.t, err, "waiting for %s", expr)
}

func (tb *tab) eval(expr string) string {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](expr))
	require.NoError(tb.t, err, expr)
	return v
}

func (tb *tab) visit(fragment string) {
	tb.t.Helper()
	tb.do(chromedp.Evaluate[chromedp.Void](`location.hash = ` + jsString(fragment)))
}

// signIn opens the console and signs in with token from the keyboard.
func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.base + "/console/"))
	tb.wait(`!document.getElementById('sign-in').hidden`)
	tb.do(chromedp.SendKeys(chromedp.ID("token"), token+"\r"))
	tb.wait(`!document.getElementById('nav').hidden && document.querySelector('#runs-summary') !== null`)
}

// screenshot writes docs/<name>.png, of the whole page, when
// SKILLGATE_UPDATE_SCREENSHOTS=1.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	if os.Getenv("SKILLGATE_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	buf, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(tb.t, err)
	require.NoError(tb.t, os.WriteFile(filepath.Join("..", "..", "docs", name+".png"), buf, 0o644))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rpcAs makes one /rpc call as token and returns its result.
func rpcAs(t *testing.T, base, token, method string, params any) json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/rpc", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Empty(t, out.Error, "%s", method)
	return out.Result
}

// startAsync starts run_code in the background as token and returns its
// run id.
func startAsync(t *testing.T, base, token, code string, args map[string]any) string {
	t.Helper()
	var r struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(rpcAs(t, base, token, "run_code",
		map[string]any{"language": "python", "code": code, "args": args, "async": true}), &r))
	return r.RunID
}

// consoleSkills writes the skills the console tests use: an action
// skill with an args_schema, and an instruction skill whose SKILL.md
// tries every way to run script in the page.
func consoleSkills(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"greet/skill.toml": `name = "acme.demo.greet"
version = "1.0.0"
description = "Greet someone, in a voice of your choice."
kind = "action"
[runtime]
language = "python"
entrypoint = "code/main.py"
export = "main"
args_schema = "args.schema.json"
`,
		"greet/args.schema.json": `{"type":"object","required":["name"],"additionalProperties":false,
 "properties":{"name":{"type":"string","description":"Who to greet"},
  "times":{"type":"integer","minimum":1,"maximum":5,"default":2},
  "shout":{"type":"boolean","description":"Upper case"}}}`,
		"greet/SKILL.md": "---\nname: Greet\nshort_description: Says hello.\ntags: [demo]\n---\n# Greet\n\nSays **hello** to `name`, `times` times. See [the code](code/main.py).\n\n- one\n- two\n",
		"greet/code/main.py": `def main(args):
    text = "Hello, %s!" % args["name"]
    if args.get("shout"):
        text = text.upper()
    for _ in range(args.get("times", 2)):
        print(text)
    return {"greeting": text}
`,
		"evil/skill.toml": "name = \"evil.docs.inert\"\nversion = \"1.0.0\"\ndescription = \"A SKILL.md that tries to run script.\"\nkind = \"instruction\"\n",
		"evil/SKILL.md": "---\nname: Inert\nshort_description: tries every trick\n---\n" +
			"# Title <script>window.__pwned = 1</script>\n\n" +
			"<script>window.__pwned = 2</script>\n\n" +
			"<img src=x onerror=\"window.__pwned = 3\">\n\n" +
			"[click me](javascript:window.__pwned=4) and [tabbed](java\tscript:window.__pwned=5) and " +
			"[data](data:text/html,<script>alert(1)</script>) and [vb](VBScript:msgbox)\n\n" +
			"<a href=\"javascript:window.__pwned=6\" onclick=\"window.__pwned=7\">raw link</a>\n\n" +
			"**bold <b onmouseover=\"window.__pwned=8\">x</b>** and ![pic](javascript:alert(1))\n\n" +
			"<iframe src=\"javascript:window.__pwned=9\"></iframe><style>body{display:none}</style>\n\n" +
			"[docs](https://example.com/docs)\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// consoleGateway serves consoleSkills to alice and bob (agents) and ops
// (admin), and returns the console's base URL and their tokens.
func consoleGateway(t *testing.T) (string, map[string]string) {
	requireSandbox(t)
	tokens := map[string]string{}
	var file strings.Builder
	file.WriteString("identities:\n")
	for _, who := range [][2]string{{"alice", "agent"}, {"bob", "agent"}, {"ops", "admin"}} {
		token, hash := newToken(t)
		tokens[who[0]] = token
		fmt.Fprintf(&file, "  - {name: %s, class: %s, tokens: [%s], methods: [\"*\"], namespaces: [\"*\"]}\n", who[0], who[1], hash)
	}
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(authFile, []byte(file.String()), 0o600))
	g := startGateway(t, "--auth-file", authFile, "--skills-dir", consoleSkills(t), "--sandbox-workers", "2")
	return "http://" + g.addrs["http"], tokens
}

const tickingCode = `import sys, time, runtime
def main(args):
    for i in range(3000):
        print("tick", i, flush=True)
        if i % 10 == 0:
            print("warn", i, file=sys.stderr, flush=True)
        runtime.progress(i + 1, 3000, "ticking")
        time.sleep(0.05)
    return {}
`

const blobsCode = `import base64, sys, runtime
from runtime import blobs, log
def main(args):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    log.info("to the log")
    runtime.progress(1, 1, "done")
    t = blobs.write_text("a text blob\nsecond line\n")
    p = blobs.write_bytes(base64.b64decode(args["png"]), "image/png")
    return {"text": t, "image": p}
`

func tinyPNG(t *testing.T) string {
	img := image.NewRGBA(image.Rect(0, 0, 160, 64))
	for x := range 160 {
		for y := range 64 {
			img.Set(x, y, color.RGBA{R: uint8(x + 60), G: 90, B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestConsole drives the console on one gateway, in one browser, as the
// people who use it: alice's runs and skills, then what bob and ops
// (admin) each see of them.
func TestConsole(t *testing.T) {
	base, tokens := consoleGateway(t)
	alice := openTab(t, browserFor(t), base)
	alice.signIn(tokens["alice"])
	consoleRuns(t, base, tokens, alice)
	consoleSkillPages(alice)
	consoleIdentities(t, base, tokens, alice.ctx)
}

// A signed-in user watches a streamed run's lines arrive while it runs,
// cancels it with the button, and reads a finished run's streams,
// progress, result and blobs: a text preview, an image shown and a
// download.
func consoleRuns(t *testing.T, base string, tokens map[string]string, alice *tab) {

	chatty := startAsync(t, base, tokens["alice"], tickingCode, nil)
	alice.visit("#/runs/" + chatty)
	alice.wait(`document.querySelectorAll('#run-logs li.line').length >= 3`)
	first := alice.eval(`String(document.querySelectorAll('#run-logs li.line').length)`)
	alice.wait(`document.querySelectorAll('#run-logs li.line').length > ` + first)
	assert.Contains(t, alice.eval(`document.querySelector('#view h1').textContent`), "running", "lines arrive while the run lasts")
	alice.wait(`document.querySelector('#run-logs .stream-stdout + .text').textContent.startsWith('tick')`)
	alice.wait(`document.querySelector('#run-logs .stream-stderr + .text').textContent.startsWith('warn')`)
	alice.wait(`document.getElementById('run-progress').value > 0`)
	alice.wait(`!document.getElementById('cancel-run').disabled`)
	alice.do(chromedp.Focus(chromedp.ID("cancel-run")), chromedp.KeyEvent("\r"))
	alice.wait(`document.getElementById('run-result').textContent.includes('CANCELLED')`)
	assert.Contains(t, alice.eval(`document.querySelector('#view h1').textContent`), "failed")
	assert.Equal(t, "true", alice.eval(`String(document.getElementById('cancel-run').disabled)`))

	// A run past its timeout: the error and the retry hint it carries.
	var slow struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(rpcAs(t, base, tokens["alice"], "run_code", map[string]any{"language": "python",
		"code": "import time\ndef main(args):\n    time.sleep(30)", "timeout_ms": 300, "async": true}), &slow))
	alice.visit("#/runs/" + slow.RunID)
	alice.wait(`document.getElementById('run-result').textContent.includes('EXECUTION_TIMEOUT')`)
	alice.wait(`document.querySelector('#run-result .retry') !== null`)
	assert.Regexp(t, `^Retry hint: wait [0-9.]+ m?s, at most [0-9]+ attempts\.$`, alice.eval(`document.querySelector('#run-result .retry').textContent`))

	var in struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal(rpcAs(t, base, tokens["alice"], "create_blob", map[string]any{"content": "the input\n"}), &in))
	var started struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(rpcAs(t, base, tokens["alice"], "run_code", map[string]any{"language": "python",
		"code": blobsCode, "args": map[string]any{"png": tinyPNG(t)}, "input_blobs": []string{in.BlobID}, "async": true}), &started))
	done := started.RunID
	alice.visit("#/runs/" + done)
	// The page shows the result get_run answers at once, then the events
	// watch_run replays.
	alice.wait(`document.getElementById('run-output') !== null && document.querySelectorAll('#run-blobs .blob').length === 3 &&
		document.querySelectorAll('#run-logs li.line').length === 3`)
	streams := alice.eval(`[...document.querySelectorAll('#run-logs li.line')].map(li => li.querySelector('.stream').textContent + ':' + li.querySelector('.text').textContent).join('|')`)
	for _, want := range []string{"stdout:to stdout", "stderr:to stderr", "log:"} {
		assert.Contains(t, streams, want)
	}
	assert.Contains(t, alice.eval(`document.getElementById('run-output').textContent`), `"image": "blob:`)
	assert.Equal(t, "1", alice.eval(`String(document.getElementById('run-progress').value)`))

	// The input and the text blob, previewed; then the image, shown from
	// its bytes.
	var outputs struct{ Text, Image string }
	require.NoError(t, json.Unmarshal([]byte(alice.eval(`document.getElementById('run-output').textContent`)), &outputs))
	entry := func(id string) string { return `#run-blobs .blob[data-blob="` + id + `"]` }
	assert.Contains(t, alice.eval(`document.querySelector('#run-blobs .blob').textContent`), in.BlobID+"input", "inputs first")
	alice.do(chromedp.Click(chromedp.CSS(entry(in.BlobID) + ` button`)))
	alice.wait(`(document.querySelector('` + entry(in.BlobID) + ` .blob-text') || {}).textContent === 'the input\n'`)
	alice.do(chromedp.Click(chromedp.CSS(entry(outputs.Text) + ` button`)))
	alice.wait(`(document.querySelector('` + entry(outputs.Text) + ` .blob-text') || {}).textContent === 'a text blob\nsecond line\n'`)
	alice.do(chromedp.Click(chromedp.CSS(entry(outputs.Image) + ` button`)))
	alice.wait(`(() => { const i = document.querySelector('#run-blobs img'); return i && i.complete && i.naturalWidth === 160; })()`)
	alice.screenshot("console-run")
	// Download builds the file from the blob's pieces and hands the
	// browser a blob: URL of the gateway's origin.
	// The test keeps the Blob made, since the page's CSP does not let even
	// the test fetch a blob: URL.
	got, err := chromedp.Run(alice.ctx, chromedp.Evaluate[string](`(async () => {
		const made = []; const create = URL.createObjectURL; const click = HTMLAnchorElement.prototype.click;
		URL.createObjectURL = (b) => { made.push(b); return create(b); };
		const names = []; HTMLAnchorElement.prototype.click = function () { names.push(this.download); };
		document.querySelectorAll('#run-blobs .blob[data-blob="`+outputs.Text+`"] button')[1].click();
		for (let i = 0; i < 200 && names.length === 0; i++) await new Promise(r => setTimeout(r, 50));
		URL.createObjectURL = create; HTMLAnchorElement.prototype.click = click;
		return names.length ? names[0] + ' ' + made[0].type + ' ' + await made[0].text() : 'no download'; })()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Regexp(t, `^blob_[0-9a-f]+ text/plain a text blob\nsecond line\n$`, got)
}

// Identities stay apart in the console as on /rpc: bob never sees
// alice's runs, not even by their id, while ops (admin) lists everyone's,
// filters them, and reads the gateway's state.
func consoleIdentities(t *testing.T, base string, tokens map[string]string, browser context.Context) {
	t.Helper()
	aliceRun := startAsync(t, base, tokens["alice"], "def main(args):\n    print('alice was here')\n    return {}", nil)

	bob := openTab(t, browser, base) // a tab of its own: its own token
	bob.signIn(tokens["bob"])
	bob.wait(`document.getElementById('runs-summary').textContent.includes('0 runs')`)
	assert.NotContains(t, bob.eval(`document.getElementById('runs-body').textContent`), aliceRun)
	assert.Equal(t, "true", bob.eval(`String(document.getElementById('nav-gateway').hidden)`))
	assert.Equal(t, "false", bob.eval(`String(document.getElementById('f-identity') !== null)`))
	bob.visit("#/runs/" + aliceRun)
	bob.wait(`document.querySelector('#view .error') !== null`)
	assert.Contains(t, bob.eval(`document.querySelector('#view .error').textContent`), "RUN_NOT_FOUND")
	assert.NotContains(t, bob.eval(`document.body.textContent`), "alice was here")

	ops := openTab(t, bob.ctx, base)
	ops.signIn(tokens["ops"])
	bobRun := startAsync(t, base, tokens["bob"], "def main(args):\n    return {}", nil)
	ops.wait(`document.querySelector('#runs-body tr[data-run=` + jsString(aliceRun) + `]') !== null && ` +
		`document.querySelector('#runs-body tr[data-run=` + jsString(bobRun) + `]') !== null`)
	assert.Contains(t, ops.eval(`document.querySelector('#runs-body tr[data-run=`+jsString(aliceRun)+`]').textContent`), "alice")
	ops.do(chromedp.SendKeys(chromedp.ID("f-identity"), "bob"))
	ops.wait(`document.querySelectorAll('#runs-body tr').length === 1 && document.querySelector('#runs-body tr[data-run=` + jsString(bobRun) + `]') !== null`)
	assert.NotContains(t, ops.eval(`document.getElementById('runs-body').textContent`), aliceRun)
	ops.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('f-identity'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))
	ops.wait(`document.querySelectorAll('#runs-body tr').length > 2`)
	ops.screenshot("console-runs")
	ops.visit("#/runs/" + aliceRun)
	ops.wait(`document.getElementById('run-logs').textContent.includes('alice was here')`)

	ops.visit("#/gateway")
	ops.wait(`document.querySelectorAll('#gateway-status section.card').length === 6`)
	status := ops.eval(`document.getElementById('gateway-status').textContent`)
	for _, want := range []string{"Connections", "Runs", "Sandbox", "Workers2", "Blob store"} {
		assert.Contains(t, status, want)
	}
	ops.screenshot("console-gateway")
	bob.visit("#/gateway") // not an admin: back to the runs
	bob.wait(`document.querySelector('#view h1').textContent === 'Runs'`)
}

// The skills pages: the catalog searched by name and namespace, a skill's
// SKILL.md rendered, its schema's form starting a run from the keyboard,
// and a hostile SKILL.md rendered inert.
func consoleSkillPages(alice *tab) {
	t := alice.t

	alice.visit("#/skills")
	alice.wait(`document.querySelectorAll('#skills-list li').length >= 3`)
	alice.do(chromedp.SendKeys(chromedp.ID("skill-search"), "acme"))
	alice.wait(`document.querySelectorAll('#skills-list li').length === 1`)
	assert.Contains(t, alice.eval(`document.getElementById('skills-list').textContent`), "acme.demo.greet")

	alice.visit("#/skills/acme.demo.greet")
	alice.wait(`document.querySelector('#skill-md h2') !== null && document.getElementById('run-form') !== null`)
	assert.Equal(t, "hello", alice.eval(`document.querySelector('#skill-md strong').textContent`))
	assert.Contains(t, alice.eval(`document.querySelector('#skill-md a').getAttribute('href')`), "/files/code/main.py",
		"a relative link leads to the skill's file")
	assert.Contains(t, alice.eval(`document.getElementById('args-schema').textContent`), "Who to greet")
	assert.Equal(t, "2", alice.eval(`document.querySelector('#run-form [name=times]').value`), "the schema's default")
	alice.screenshot("console-skill")
	alice.do(chromedp.SendKeys(chromedp.CSS(`#run-form [name=name]`), "Ada\r"))
	alice.wait(`location.hash.startsWith('#/runs/run_') && document.getElementById('run-output') !== null`)
	assert.Contains(t, alice.eval(`document.getElementById('run-output').textContent`), "Hello, Ada!")
	// A run that ended before its page opened shows its result from
	// get_run at once; its log lines follow from watch_run's replay.
	alice.wait(`document.getElementById('run-logs').textContent.includes('Hello, Ada!')`)

	// A required field left empty is the browser's to refuse: no run.
	alice.visit("#/skills/acme.demo.greet")
	alice.wait(`document.getElementById('run-form') !== null`)
	alice.do(chromedp.Click(chromedp.CSS(`#run-form button[type=submit]`)))
	assert.Equal(t, "false", alice.eval(`String(document.querySelector('#run-form [name=name]').validity.valid)`))
	assert.True(t, strings.HasPrefix(alice.eval(`location.hash`), "#/skills/"))

	alice.visit("#/skills/evil.docs.inert")
	alice.wait(`document.querySelector('#skill-md a') !== null`)
	md := `document.getElementById('skill-md')`
	assert.Equal(t, "0", alice.eval(`String(`+md+`.querySelectorAll('script, img, iframe, style, b, object, embed').length)`))
	assert.Equal(t, "0", alice.eval(`String([...`+md+`.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length)`))
	assert.Equal(t, "https://example.com/docs", alice.eval(`[...`+md+`.querySelectorAll('a')].map(a => a.href).join(' ')`),
		"the only link is the https one")
	assert.Equal(t, "noopener noreferrer nofollow", alice.eval(md+`.querySelector('a').rel`))
	text := alice.eval(md + `.textContent`)
	for _, shown := range []string{"<script>window.__pwned = 2</script>", "<img src=x onerror=", "javascript:window.__pwned=4", "<iframe"} {
		assert.Contains(t, text, shown, "raw HTML and refused links stay visible as text")
	}
	assert.Equal(t, "undefined", alice.eval(`typeof window.__pwned`))
	assert.Equal(t, "visible", alice.eval(`getComputedStyle(document.body).visibility`))

	bad, err := chromedp.Run(alice.ctx, chromedp.Evaluate[[]string](markdownProperties, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Empty(t, bad)
}

// markdownProperties checks the renderer in the page: safeHref on a table
// of URLs, then thousands of documents mixed (from a fixed seed) out of
// hostile pieces, each rendered to nothing but the renderer's own
// elements and attributes, with links only to http, https or the
// resolver's fragments. It returns what broke a rule.
const markdownProperties = `(async () => {
  const m = await import('./markdown.js');
  const bad = [];
  const hrefs = [['https://a.example/x', 'https://a.example/x'], ['HTTP://a.example', 'HTTP://a.example'],
    ['javascript:alert(1)', null], ['JaVaScRiPt:alert(1)', null], [' javascript:x', null], ['java\tscript:x', null],
    ['java\nscript:x', null], ['\u0000javascript:x', null], ['data:text/html,x', null], ['vbscript:x', null],
    ['file:///etc/passwd', null], ['blob:x', null], ['mailto:a@b', null], ['x:y', null], ['./a.md', './a.md'],
    ['a/b.md#c', 'a/b.md#c'], ['#top', '#top'], ['/rpc', '/rpc'], ['a.md?x=y:z', 'a.md?x=y:z'], ['', null],
    ['javascript&colon;x', 'javascript&colon;x'], ['\\evil', null]];
  for (const [u, want] of hrefs) if (m.safeHref(u) !== want) bad.push('safeHref(' + JSON.stringify(u) + ') = ' + m.safeHref(u));
  const pieces = ['<script>x()</script>', '<img src=x onerror=alert(1)>', '[a](javascript:alert(1))', '[b](JaVaScRiPt:x)',
    '[c]( javascript:x)', '[d](java\tscript:x)', '[e](data:text/html,x)', '![f](http://evil/x.png)', '<a href="javascript:x">',
    '**', '*', '_', '` + "`" + `', '` + "```" + `', '\n', '\n\n', '# ', '> ', '- ', '1. ', '    ', '[', '](', ')', '<', '>', '"',
    "'", ' on', 'click=', '&lt;', '\\', 'https://ok.example/', '[g](https://ok.example/p)', '[h](./rel.md)', '[i](//evil.example)',
    '[j](vbscript:x)', '[k](#top)', ':', '<https://auto.example>', '<javascript:x>', '---\n', 'word '];
  const tags = new Set(['P', 'H2', 'H3', 'H4', 'H5', 'H6', 'A', 'CODE', 'PRE', 'STRONG', 'EM', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'HR', 'SPAN']);
  const attrs = new Set(['href', 'rel', 'start', 'data-language']);
  let seed = 20261127;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (let i = 0; i < 3000 && bad.length < 10; i++) {
    let src = '';
    for (let k = rnd(40); k >= 0; k--) src += pieces[rnd(pieces.length)];
    const host = document.createElement('div');
    host.append(m.render(src, (u) => '#/x/' + u));
    for (const e of host.querySelectorAll('*')) {
      if (!tags.has(e.tagName)) bad.push(e.tagName + ' from ' + JSON.stringify(src));
      for (const a of e.attributes) if (!attrs.has(a.name)) bad.push(a.name + ' from ' + JSON.stringify(src));
      const h = e.getAttribute('href');
      if (h !== null && !/^(https?:)?\/\/|^#\/x\//i.test(h)) bad.push('href ' + h + ' from ' + JSON.stringify(src));
    }
  }
  return bad;
})()`

// Without an auth file on loopback the console signs in by itself, as the
// anonymous identity, which operates the gateway.
func TestConsoleOpenGateway(t *testing.T) {
	g := startGateway(t, "--sandbox-workers", "0")
	base := "http://" + g.addrs["http"]
	browser := browserFor(t)
	tb := openTab(t, browser, base)
	tb.do(chromedp.Navigate(base + "/console/"))
	tb.wait(`document.getElementById('who-text').textContent.includes('anonymous')`)
	assert.Equal(t, "true", tb.eval(`String(document.getElementById('sign-in').hidden)`))
	assert.Equal(t, "false", tb.eval(`String(document.getElementById('nav-gateway').hidden)`))
	tb.visit("#/gateway")
	tb.wait(`document.getElementById('gateway-status').textContent.includes('--sandbox-workers 0')`)
}

// The console's files are behind the listener's Origin and Host guard,
// and --console=false leaves them out.
func TestConsoleGuardAndFlag(t *testing.T) {
	g := startGateway(t, "--sandbox-workers", "0")
	get := func(url string, header map[string]string) int {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if h, ok := header["Host"]; ok {
			req.Host = h
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	page := "http://" + g.addrs["http"] + "/console/app.js"
	assert.Equal(t, http.StatusOK, get(page, nil))
	assert.Equal(t, http.StatusForbidden, get(page, map[string]string{"Host": "rebound.example"}), "DNS rebinding")
	assert.Equal(t, http.StatusForbidden, get(page, map[string]string{"Origin": "https://elsewhere.example"}))

	off := startGateway(t, "--sandbox-workers", "0", "--console=false")
	assert.Equal(t, http.StatusNotFound, get("http://"+off.addrs["http"]+"/console/", nil))
}
