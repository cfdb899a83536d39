package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

var binary string

func TestMain(m *testing.M) {
	sandbox.MaybeInit() // the isolation check re-executes this binary
	dir, err := os.MkdirTemp("", "skillgate-e2e-")
	if err != nil {
		panic(err)
	}
	// A prebuilt binary lets the tests run as a user without a Go
	// toolchain of its own (make test-rootless).
	binary = os.Getenv("SKILLGATE_E2E_BINARY")
	if binary == "" {
		binary = filepath.Join(dir, "skillgate")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			panic(string(out))
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// gatewayProcess is a `skillgate serve` child process on ephemeral ports.
type gatewayProcess struct {
	cmd   *exec.Cmd
	addrs map[string]string // listener -> address, from the "listening" log lines
	logs  chan map[string]any
	// startup holds the log lines read before "skillgate ready", which
	// takeStartup hands on once: what the gateway logs while it starts
	// (a skill environment that failed at once) is not lost to a test.
	startup []map[string]any
}

// takeStartup returns the lines logged before the gateway was ready, the
// first time it is called.
func (g *gatewayProcess) takeStartup() []map[string]any {
	lines := g.startup
	g.startup = nil
	return lines
}

// waitLog reads the gateway's log until a line with this message, for at
// most 20 seconds, and returns that line.
func (g *gatewayProcess) waitLog(t *testing.T, message string) map[string]any {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case rec, ok := <-g.logs:
			require.True(t, ok, "the gateway exited before logging %q", message)
			if rec["message"] == message {
				return rec
			}
		case <-deadline:
			t.Fatalf("no %q in the gateway's log", message)
		}
	}
}

func startGateway(t testing.TB, args ...string) *gatewayProcess {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--drain-delay", "0"}, args...)
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	g := &gatewayProcess{cmd: cmd, addrs: map[string]string{}, logs: make(chan map[string]any, 1000)}
	t.Cleanup(func() { stopGateway(cmd) })
	lines := bufio.NewScanner(stderr)
	go func() {
		defer close(g.logs)
		for lines.Scan() {
			var rec map[string]any
			if json.Unmarshal(lines.Bytes(), &rec) == nil {
				g.logs <- rec
			}
		}
	}()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case rec, ok := <-g.logs:
			require.True(t, ok, "gateway exited during start-up")
			g.startup = append(g.startup, rec)
			if rec["message"] == "listening" {
				g.addrs[rec["listener"].(string)] = rec["addr"].(string)
			}
			if rec["message"] == "skillgate ready" {
				return g
			}
		case <-deadline:
			t.Fatal("gateway did not become ready")
		}
	}
}

// stopGateway ends a gateway the way an operator does, with SIGTERM, so
// that it removes what it made (its sandboxes' cgroups among them: a
// killed rootless gateway leaves them for the next one to sweep); one that
// has not exited within the bound is killed.
func stopGateway(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// runCLI runs the binary to completion; a run that would hang is killed.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}

func TestServeCallAndDrain(t *testing.T) {
	g := startGateway(t)
	addr := g.addrs["tcp"]

	out, _, code := runCLI(t, "call", "--addr", addr, "_Keepalive", "{}")
	assert.Equal(t, 0, code)
	assert.JSONEq(t, `{}`, out)

	out, _, code = runCLI(t, "call", "--addr", addr, "Initialize", `{"protocol_version":"1.0"}`)
	require.Equal(t, 0, code)
	var init map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &init))
	assert.Equal(t, "1.0", init["protocol_version"])
	assert.NotEmpty(t, init["session_id"])
	assert.EqualValues(t, 1<<20, init["max_message_size"])
	assert.EqualValues(t, 30000, init["keepalive_interval_ms"])
	assert.EqualValues(t, 20000, init["keepalive_timeout_ms"])

	_, stderr, code := runCLI(t, "call", "--addr", addr, "no_such_method", "{}")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "JSONRPC_METHOD_NOT_FOUND")

	_, _, code = runCLI(t, "call", "--addr", addr, "_Keepalive", "[1]")
	assert.Equal(t, 2, code, "bad params JSON is a usage error")
	_, _, code = runCLI(t, "call", "--addr", "127.0.0.1:1", "_Keepalive")
	assert.Equal(t, 2, code, "connection failures exit 2")

	resp, err := http.Get("http://" + g.addrs["metrics"] + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "skillgate_connections_accepted_total")
	assert.Contains(t, string(body), `skillgate_rpc_requests_total{front="framed",method="other",outcome="JSONRPC_METHOD_NOT_FOUND"} 1`)

	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, g.cmd.Wait(), "a drained gateway exits 0")
}

func TestServeRefusesBadConfig(t *testing.T) {
	_, stderr, code := runCLI(t, "serve", "--listen", "", "--http-listen", "", "--metrics-listen", "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "nothing to serve")
	_, stderr, code = runCLI(t, "serve", "--max-message-size", "100", "--http-listen", "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "max message size")
}

func TestVersion(t *testing.T) {
	out, _, code := runCLI(t, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "skillgate "))
}

// newToken mints a token with "skillgate token" and returns it with the
// hash an auth file lists.
func newToken(t *testing.T) (token, hash string) {
	t.Helper()
	out, _, code := runCLI(t, "token")
	require.Equal(t, 0, code)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "token: "); ok {
			token = v
		}
		if v, ok := strings.CutPrefix(line, "hash:  "); ok {
			hash = v
		}
	}
	require.NotEmpty(t, token)
	require.NotEmpty(t, hash)
	return token, hash
}

func TestServeWithAuthFile(t *testing.T) {
	dir := t.TempDir()
	token, hash := newToken(t)
	authFile := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.WriteFile(authFile, []byte("identities:\n  - name: ci\n    class: service\n    tokens: ["+hash+"]\n"+
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n"), 0o600))
	g := startGateway(t, "--auth-file", authFile)
	addr := g.addrs["tcp"]

	_, stderr, code := runCLI(t, "call", "--addr", addr, "list_skills")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "AUTH_REQUIRED")
	out, _, code := runCLI(t, "call", "--addr", addr, "--token", token, "list_skills")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "skills.protocol.guide")

	req, _ := http.NewRequest(http.MethodPost, "http://"+g.addrs["http"]+"/rpc",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"list_skills","params":{}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `"result"`)
}

func TestRefusesOpenOnNonLoopback(t *testing.T) {
	_, stderr, code := runCLI(t, "serve", "--listen", "0.0.0.0:0", "--http-listen", "", "--metrics-listen", "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--allow-anonymous")
}

// SIGHUP reloads the skills without a restart.
func TestSIGHUPReloadsSkills(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, "--skills-dir", dir, "--watch-skills=false", "--sandbox-workers", "0")
	addr := g.addrs["tcp"]
	out, _, code := runCLI(t, "call", "--addr", addr, "list_skills")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "acme.hup.test")

	skill := filepath.Join(dir, "hup")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "skill.toml"), []byte("name = \"acme.hup.test\"\nversion = \"1.0.0\"\n"+
		"description = \"Appears on SIGHUP.\"\nkind = \"instruction\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: Hup\nshort_description: Hup.\n---\nHup.\n"), 0o644))
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool {
		out, _, _ := runCLI(t, "call", "--addr", addr, "list_skills")
		return strings.Contains(out, "acme.hup.test")
	}, 10*time.Second, 100*time.Millisecond)
}
