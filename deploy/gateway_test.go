package deploy_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bounds of waiting on child processes. Generous: the machine may be busy;
// nothing is asserted about how long anything takes.
const (
	startTimeout = 90 * time.Second
	stopTimeout  = 30 * time.Second
	pollInterval = 200 * time.Millisecond
)

// gatewayProc is a running "skillgate serve" on loopback with ports the
// kernel picked.
type gatewayProc struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	addrs   map[string]string // listener name (tcp, http, metrics) -> address; guarded by mu
	log     strings.Builder   // guarded by mu
	logR    *os.File          // read end of the gateway's stderr
	logDone chan struct{}
}

// startGateway runs the built binary with every listener it has on
// 127.0.0.1:0, learns the ports from its "listening" log lines, waits for
// /readyz and stops the process (SIGTERM, then SIGKILL) when t ends.
func startGateway(t *testing.T, extra ...string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(gatewayBinary(t), gatewayArgs(t, extra)...)
	cmd.Env = envWithoutSkillgate()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stderr = w
	require.NoError(t, cmd.Start())
	_ = w.Close()
	g := &gatewayProc{cmd: cmd, addrs: make(map[string]string), logR: r, logDone: make(chan struct{})}
	go g.readLog()
	t.Cleanup(func() { g.stop(t) })
	g.waitReady(t)
	return g
}

func gatewayArgs(t *testing.T, extra []string) []string {
	flags := binaryFlags(t)
	args := []string{"serve", "--log-format=json"}
	for _, name := range []string{"listen", "http-listen", "metrics-listen"} {
		if _, ok := flags[name]; ok {
			args = append(args, "--"+name+"=127.0.0.1:0")
		}
	}
	if _, ok := flags["data-dir"]; ok {
		args = append(args, "--data-dir="+t.TempDir())
	}
	return append(args, extra...)
}

// envWithoutSkillgate keeps the caller's SKILLGATE_* settings away from the
// gateway under test.
func envWithoutSkillgate() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKILLGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

func (g *gatewayProc) readLog() {
	defer close(g.logDone)
	defer g.logR.Close()
	sc := bufio.NewScanner(g.logR)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct{ Message, Listener, Addr string }
		_ = json.Unmarshal(sc.Bytes(), &line)
		g.mu.Lock()
		g.log.Write(sc.Bytes())
		g.log.WriteByte('\n')
		if line.Message == "listening" && line.Listener != "" {
			g.addrs[line.Listener] = line.Addr
		}
		g.mu.Unlock()
	}
}

// addr returns the address of a listener ("" when not seen).
func (g *gatewayProc) addr(listener string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addrs[listener]
}

func (g *gatewayProc) logText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

// waitReady polls /readyz on the metrics listener until it answers 200.
func (g *gatewayProc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-g.logDone:
			t.Fatalf("gateway exited during start:\n%s", g.logText())
		default:
		}
		if a := g.addr("metrics"); a != "" {
			if code, _ := httpGet("http://" + a + "/readyz"); code == http.StatusOK {
				return
			}
		}
		time.Sleep(pollInterval)
	}
	t.Fatalf("gateway not ready within %s:\n%s", startTimeout, g.logText())
}

// stop sends SIGTERM (the graceful path a service manager takes), kills
// after stopTimeout, and expects a clean exit.
func (g *gatewayProc) stop(t *testing.T) {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(stopTimeout):
		_ = g.cmd.Process.Kill()
		err = <-done
		t.Errorf("gateway did not stop within %s of SIGTERM", stopTimeout)
	}
	select {
	case <-g.logDone:
	case <-time.After(stopTimeout):
		_ = g.logR.Close() // a descendant still holds the log pipe
		<-g.logDone
	}
	assert.NoError(t, err, "gateway should exit 0 after SIGTERM:\n%s", g.logText())
}

// httpGet returns the status and body of a GET, status 0 on a transport
// error.
func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(body)
}
