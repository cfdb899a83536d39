package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFetchSkill writes a skill that fetches args["url"] with urllib and
// returns the body or the error; network is its [permissions] network.
func writeFetchSkill(t *testing.T, dir, name, network string) {
	t.Helper()
	root := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(root, 0o755))
	manifest := fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Fetches a URL.\"\nkind = \"action\"\n"+
		"[runtime]\nlanguage = \"python\"\nentrypoint = \"main.py\"\nexport = \"main\"\n[permissions]\n%s", name, network)
	require.NoError(t, os.WriteFile(filepath.Join(root, "skill.toml"), []byte(manifest), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "SKILL.md"), []byte("---\nname: Fetch\nshort_description: Fetch.\n---\nFetch.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.py"), []byte(fetchPy), 0o644))
}

const fetchPy = `import urllib.request, urllib.error
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return "HTTP %d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
def main(args):
    return {"got": fetch(args["url"])}
`

func TestEgressThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.URL.Path)
	}))
	defer site.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	hp, otherHP := site.Listener.Addr().String(), other.Listener.Addr().String()
	dir := t.TempDir()
	writeFetchSkill(t, dir, "acme.net.fetch", fmt.Sprintf("network = [%q]\n", hp))
	writeFetchSkill(t, dir, "acme.net.offline", "")
	g := startGateway(t, "--skills-dir", dir, "--watch-skills=false", "--sandbox-workers", "1",
		"--egress-allow-private", hp, "--egress-allow-private", otherHP)
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	fetch := func(method, skill, url string) runObject {
		if method == "run_code" {
			return c.run("run_code", fmt.Sprintf(`{"language":"python","code":%q,"args":{"url":%q}}`, fetchPy, url))
		}
		return c.run("execute_skill", fmt.Sprintf(`{"name":%q,"args":{"url":%q}}`, skill, url))
	}

	r := fetch("execute_skill", "acme.net.fetch", site.URL+"/allowed")
	require.Equal(t, "completed", r.Status, "%+v %+v", r, r.Error)
	assert.JSONEq(t, `{"got":"hello /allowed"}`, string(r.Output))

	r = fetch("execute_skill", "acme.net.fetch", other.URL+"/")
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, fmt.Sprintf(`{"got":"HTTP 403 egress denied: %s (not_allowed)"}`, otherHP), string(r.Output))
	assert.Contains(t, r.LogsPreview, "egress denied: "+otherHP+" (not_allowed)")

	for _, tc := range []struct{ method, skill string }{{"execute_skill", "acme.net.offline"}, {"run_code", ""}} {
		r = fetch(tc.method, tc.skill, site.URL+"/")
		require.Equal(t, "completed", r.Status, "%+v", r)
		assert.Contains(t, string(r.Output), "URLError", "%s %s has no network", tc.method, tc.skill)
	}

	resp, err := http.Get("http://" + g.addrs["metrics"] + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, string(body), `skillgate_egress_connections_total{result="allowed"} 1`)
	assert.Contains(t, string(body), `skillgate_egress_connections_total{result="not_allowed"} 1`)
}

func TestEgressFlagsRefuseBadPatterns(t *testing.T) {
	for _, args := range [][]string{
		{"--egress-allow", "api.example.com"},
		{"--egress-deny", "*.:443"},
		{"--egress-allow-private", "10.0.0.0/33:80"},
		{"--run-code-network", "nope"},
		{"--egress", "maybe"},
		{"--egress-max-connections", "0"},
		{"--egress-max-header-bytes", "1023"},
		{"--egress-max-header-readers", "0"},
	} {
		cfg, err := parseServe(t, args...)
		require.NoError(t, err, "%v", args)
		assert.Error(t, cfg.validate(), "%v", args)
	}
	cfg, err := parseServe(t, "--egress-allow", "api.example.com:443,*.example.org:*", "--egress-allow-private", "127.0.0.1:8080,10.0.0.0/8:*")
	require.NoError(t, err)
	assert.NoError(t, cfg.validate())
	cfg, err = parseServe(t, "--egress-max-header-bytes", "1024", "--egress-max-header-readers", "1")
	require.NoError(t, err)
	assert.NoError(t, cfg.validate())
}

const padFetchPy = `import urllib.request, urllib.error
def main(args):
    req = urllib.request.Request(args["url"], headers={"X-Pad": "p" * args["pad"]})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return {"got": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"got": "HTTP %d %s" % (e.code, e.read().decode().strip())}
`

// The header limit reaches the proxy from its flag, and an allowed
// destination that does not answer is spec 004's ENDPOINT_UNREACHABLE.
func TestEgressHeaderLimitAndUnreachableThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	defer site.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedHP := closed.Listener.Addr().String()
	closed.Close()
	hp := site.Listener.Addr().String()
	g := startGateway(t, "--skills-dir", t.TempDir(), "--watch-skills=false", "--sandbox-workers", "1",
		"--egress-max-header-bytes", "1024", "--run-code-network", hp+","+closedHP,
		"--egress-allow-private", hp, "--egress-allow-private", closedHP)
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	fetch := func(url string, pad int) string {
		r := c.run("run_code", fmt.Sprintf(`{"language":"python","code":%q,"args":{"url":%q,"pad":%d}}`, padFetchPy, url, pad))
		require.Equal(t, "completed", r.Status, "%+v %+v", r, r.Error)
		var out struct{ Got string }
		require.NoError(t, json.Unmarshal(r.Output, &out))
		return out.Got
	}
	assert.Equal(t, "hello", fetch(site.URL+"/", 100))
	assert.Equal(t, "HTTP 431 egress denied: ? (header_too_large: the request line and headers pass 1024 bytes)",
		fetch(site.URL+"/", 2000))
	got := fetch("http://"+closedHP+"/x", 1)
	require.True(t, strings.HasPrefix(got, "HTTP 502 "), got)
	var body struct {
		Error struct {
			Code    string
			Details struct {
				EndpointURL string `json:"endpoint_url"`
				Reason      string
			}
			Retry struct {
				SuggestedDelayMS int `json:"suggested_delay_ms"`
				MaxAttempts      int `json:"max_attempts"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(got, "HTTP 502 ")), &body))
	assert.Equal(t, "ENDPOINT_UNREACHABLE", body.Error.Code)
	assert.Equal(t, "http://"+closedHP+"/x", body.Error.Details.EndpointURL)
	assert.Contains(t, body.Error.Details.Reason, "connection refused")
	assert.Equal(t, 2000, body.Error.Retry.SuggestedDelayMS)
	assert.Equal(t, 5, body.Error.Retry.MaxAttempts)
}
