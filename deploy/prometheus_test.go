package deploy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testlog"
)

// requirePrometheusEnv, set to 1 (CI does), turns a missing Prometheus into
// a failure instead of a skip.
const requirePrometheusEnv = "SKILLGATE_REQUIRE_PROMETHEUS"

// requirePrometheusTool returns the path of prometheus or promtool from the
// Debian package prometheus (/usr/bin), or from $PATH.
func requirePrometheusTool(t *testing.T, name string) string {
	t.Helper()
	if p := "/usr/bin/" + name; isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found: install the Debian package prometheus "+
		"(apt-get install -y --no-install-recommends prometheus)", name)
	if os.Getenv(requirePrometheusEnv) == "1" {
		t.Fatalf("%s; %s=1 requires it", msg, requirePrometheusEnv)
	}
	t.Skipf("%s; set %s=1 to fail instead of skipping", msg, requirePrometheusEnv)
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// runIn runs a command in dir and returns its combined output.
func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPrometheusScrapesGateway starts the gateway and a real Prometheus
// server scraping it every second on loopback, with the rules loaded, and
// reads metrics back through Prometheus' HTTP API.
func TestPrometheusScrapesGateway(t *testing.T) {
	promBin := requirePrometheusTool(t, "prometheus")
	g := startGateway(t, existingFlags(t, "--init-timeout=10m", "--keepalive-interval=10m")...)
	// One open framed connection gives the connection metrics a series.
	conn, err := net.Dial("tcp", g.addr("tcp"))
	require.NoError(t, err)
	defer conn.Close()

	p := startPrometheus(t, promBin, g.addr("metrics"))
	p.waitValue(t, `up{job="skillgate"}`, "1")
	p.waitValue(t, `skillgate_build_info == 1`, "1")
	res := p.query(t, `skillgate_build_info`)
	require.Len(t, res, 1)
	assert.NotEmpty(t, res[0].Metric["version"])
	assert.Equal(t, "skillgate", res[0].Metric["job"])
	p.waitValue(t, `skillgate_connections_active{listener="tcp"}`, "1")
	p.waitValue(t, `job:skillgate_connections_active:sum{listener="tcp"}`, "1")
	p.waitRulesHealthy(t)
}

// existingFlags keeps the --name=value arguments whose flag the binary has.
func existingFlags(t *testing.T, args ...string) []string {
	flags := binaryFlags(t)
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := flags[name]; ok {
			out = append(out, a)
		}
	}
	return out
}

// promProc is a Prometheus server on a loopback port.
type promProc struct {
	base   string
	cmd    *exec.Cmd
	out    *testlog.Buffer
	exited chan struct{} // closed once the process has been reaped
}

const promConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q, %q]
scrape_configs:
  - job_name: skillgate
    static_configs:
      - targets: [%q]
`

// startPrometheus writes a config scraping target and starts Prometheus
// with its storage under t.TempDir(). The port is picked free just before;
// if another process takes it first, it tries again.
func startPrometheus(t *testing.T, bin, target string) *promProc {
	t.Helper()
	dir := t.TempDir()
	alerts, err := filepath.Abs(alertsPath)
	require.NoError(t, err)
	recording, err := filepath.Abs(recordingPath)
	require.NoError(t, err)
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, promConfig, alerts, recording, target), 0o644))
	var last string
	for attempt := range 3 {
		p := &promProc{out: &testlog.Buffer{}, exited: make(chan struct{})}
		addr := freeLoopbackAddr(t)
		p.base = "http://" + addr
		p.cmd = exec.Command(bin, "--config.file="+cfg, "--web.listen-address="+addr,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data%d", attempt)), "--log.level=warn")
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		require.NoError(t, p.cmd.Start())
		go func() {
			_ = p.cmd.Wait()
			close(p.exited)
		}()
		if p.waitReady() {
			t.Cleanup(func() { p.stop(t) })
			return p
		}
		p.stop(t)
		last = p.out.String()
	}
	t.Fatalf("prometheus did not start:\n%s", last)
	return nil
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// waitReady polls /-/ready; false when the process exits or time runs out.
func (p *promProc) waitReady() bool {
	for deadline := time.Now().Add(startTimeout); time.Now().Before(deadline); time.Sleep(pollInterval) {
		select {
		case <-p.exited:
			return false
		default:
		}
		if code, _ := httpGet(p.base + "/-/ready"); code == 200 {
			return true
		}
	}
	return false
}

func (p *promProc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("prometheus did not stop within %s of SIGTERM", stopTimeout)
	}
}

// sample is one element of an instant vector from the query API.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value() string {
	v, _ := s.Value[1].(string)
	return v
}

// query runs an instant query and returns the vector.
func (p *promProc) query(t *testing.T, q string) []sample {
	t.Helper()
	code, body := httpGet(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	require.Equal(t, 200, code, "query %s: %s", q, body)
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	require.Equal(t, "success", resp.Status, body)
	require.Equal(t, "vector", resp.Data.ResultType, body)
	return resp.Data.Result
}

// waitValue polls q until it yields exactly one sample equal to want.
func (p *promProc) waitValue(t *testing.T, q, want string) {
	t.Helper()
	var got []sample
	for deadline := time.Now().Add(startTimeout); time.Now().Before(deadline); time.Sleep(pollInterval) {
		got = p.query(t, q)
		if len(got) == 1 && got[0].value() == want {
			return
		}
	}
	_, targets := httpGet(p.base + "/api/v1/targets")
	t.Fatalf("%s: want one sample %s, got %v\ntargets: %s\nprometheus log:\n%s", q, want, got, targets, p.out.String())
}

// waitRulesHealthy waits until every rule has been evaluated without error.
func (p *promProc) waitRulesHealthy(t *testing.T) {
	t.Helper()
	var bad []string
	for deadline := time.Now().Add(startTimeout); time.Now().Before(deadline); time.Sleep(pollInterval) {
		if bad = p.unhealthyRules(t); len(bad) == 0 {
			return
		}
	}
	t.Fatalf("rules not healthy: %v", bad)
}

func (p *promProc) unhealthyRules(t *testing.T) []string {
	code, body := httpGet(p.base + "/api/v1/rules")
	require.Equal(t, 200, code, body)
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	var bad []string
	rules := 0
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Health != "ok" {
				bad = append(bad, r.Name+": "+r.Health+" "+r.LastError)
			}
		}
	}
	if rules == 0 {
		return []string{"no rules loaded"}
	}
	return bad
}
