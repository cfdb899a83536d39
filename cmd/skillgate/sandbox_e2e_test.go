package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
)

// requireSandbox skips when this machine cannot isolate code, unless CI
// demands that it can.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.CheckIsolation(sandbox.DefaultConfig()); err != nil {
		if os.Getenv("SKILLGATE_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("isolation unavailable: %v", err)
		}
		t.Skipf("isolation unavailable: %v", err)
	}
}

type rpcClient struct {
	t   *testing.T
	url string
}

func (c rpcClient) call(method, params string) (result json.RawMessage, errCode string) {
	c.t.Helper()
	resp, err := http.Post(c.url, "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	require.NoError(c.t, err)
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage
		Error  *struct {
			Data struct {
				StringCode string `json:"string_code"`
			}
		}
	}
	require.NoError(c.t, json.NewDecoder(resp.Body).Decode(&r))
	if r.Error != nil {
		return nil, r.Error.Data.StringCode
	}
	return r.Result, ""
}

type runObject struct {
	Status      string
	Output      json.RawMessage
	OutputBlobs []string `json:"output_blobs"`
	LogsPreview string   `json:"logs_preview"`
	Error       *struct{ Type, Message string }
}

func (c rpcClient) run(method, params string) runObject {
	c.t.Helper()
	res, code := c.call(method, params)
	require.Empty(c.t, code, "%s %s", method, params)
	var r runObject
	require.NoError(c.t, json.Unmarshal(res, &r))
	return r
}

func TestExecutionThroughTheGateway(t *testing.T) {
	requireSandbox(t)
	skillsDir := t.TempDir()
	require.NoError(t, os.CopyFS(skillsDir, os.DirFS("../../examples/skills")))
	secret := filepath.Join(skillsDir, "acme.env.peek")
	require.NoError(t, os.MkdirAll(filepath.Join(secret, "code"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "skill.toml"), []byte("name = \"acme.env.peek\"\nversion = \"1.0.0\"\n"+
		"description = \"Shows its environment.\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n"+
		"export = \"main\"\n[permissions]\nsecrets = [\"ACME_API_KEY\"]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "SKILL.md"), []byte("---\nname: Env\nshort_description: Env.\n---\nEnv.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "code", "main.py"), []byte(
		"import os\ndef main(args):\n    return {k: os.environ.get(k) for k in ('ACME_API_KEY', 'GATEWAY_ONLY', 'PATH')}\n"), 0o644))

	t.Setenv("ACME_API_KEY", "k-123")
	t.Setenv("GATEWAY_ONLY", "must not leak")
	g := startGateway(t, "--skills-dir", skillsDir, "--sandbox-workers", "2", "--data-dir", t.TempDir())
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}

	r := c.run("execute_skill", `{"name":"acme.math.add","version":"1.0.0","args":{"a":2,"b":40}}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"sum":42}`, string(r.Output))

	r = c.run("execute_skill", `{"name":"acme.math.add","args":{"values":[1,2,3.5]}}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.Contains(t, string(r.Output), `6.5`, "1.1.0, the latest, takes values")

	res, _ := c.call("create_blob", `{"content":"the cat saw the dog and the cat ran","kind":"text/plain"}`)
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal(res, &blob))
	r = c.run("execute_skill", `{"name":"acme.text.wordcount","args":{"text_blob":"`+blob.BlobID+`"},"input_blobs":["`+blob.BlobID+`"]}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	require.Len(t, r.OutputBlobs, 1, "the top words are written as a blob")
	res, code := c.call("read_blob", `{"blob_id":"`+r.OutputBlobs[0]+`","mode":"full"}`)
	require.Empty(t, code)
	assert.Contains(t, string(res), `the`)

	r = c.run("run_code", `{"language":"python","mount_skills":["acme.math.add@1.0.0"],
		"code":"from skills.acme.math.add import main as add\ndef main(args):\n    return add({'a': args['x'], 'b': 1})\n",
		"args":{"x":9}}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"sum":10}`, string(r.Output))

	r = c.run("execute_skill", `{"name":"acme.env.peek"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	var env map[string]*string
	require.NoError(t, json.Unmarshal(r.Output, &env))
	require.NotNil(t, env["ACME_API_KEY"])
	assert.Equal(t, "k-123", *env["ACME_API_KEY"], "declared secrets come through")
	assert.Nil(t, env["GATEWAY_ONLY"], "nothing else of the gateway's environment does")

	for code, wantType := range map[string]string{
		`def main(a):\n    raise ValueError('bad input')`:                "ValueError",
		`def main(a):\n    return {'x': object()}`:                       "TypeError",
		`def main(a):\n    return {'x': 'y' * 5000}`:                     "OUTPUT_TOO_LARGE",
		`def main(a):\n    while True: pass`:                             "EXECUTION_TIMEOUT",
		`import os\ndef main(a):\n    return open('/etc/shadow').read()`: "FileNotFoundError",
		`def main(a:`: "SyntaxError",
	} {
		r = c.run("run_code", `{"language":"python","code":"`+code+`","timeout_ms":1500}`)
		require.Equal(t, "failed", r.Status, code)
		require.NotNil(t, r.Error, code)
		assert.Equal(t, wantType, r.Error.Type, "%s: %s", code, r.Error.Message)
	}

	// A burst larger than workers + queue: the excess is refused with
	// OVERLOADED, the rest completes, and the gateway stays healthy.
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for range 14 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, code := c.call("run_code", `{"language":"python","code":"import time\ndef main(a):\n    time.sleep(0.5)\n    return {}"}`)
			key := code
			if code == "" {
				var r runObject
				_ = json.Unmarshal(res, &r)
				key = r.Status
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// How many get in depends on timing (a finishing run holds its worker
	// until its sandbox is torn down); the exact queue bound is tested in
	// package sandbox. Here: every call completes or is refused cleanly.
	assert.Equal(t, 14, outcomes["completed"]+outcomes["OVERLOADED"], "%v", outcomes)
	assert.GreaterOrEqual(t, outcomes["completed"], 2, "%v", outcomes)

	r = c.run("run_code", `{"language":"python","code":"def main(a):\n    return {'ok': True}"}`)
	assert.Equal(t, "completed", r.Status, "healthy after the abuse")
	resp, err := http.Get("http://" + g.addrs["metrics"] + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestReadyzSaysWhatEnforcesTheLimits starts the gateway in the mode this
// process can run (rootless when the tests run as an ordinary user) and
// reads the sandbox's enforcement report from /readyz and the log.
func TestReadyzSaysWhatEnforcesTheLimits(t *testing.T) {
	requireSandbox(t)
	mode := "root"
	if os.Geteuid() != 0 {
		mode = "rootless"
	}
	g := startGateway(t, "--sandbox-mode", mode, "--sandbox-workers", "1", "--sandbox-warm-pool", "0")
	resp, err := http.Get("http://" + g.addrs["metrics"] + "/readyz")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	for _, want := range []string{"ready\n", "sandbox.mode: " + mode + "\n", "sandbox.memory: ", "sandbox.processes: ", "sandbox.cpu: RLIMIT_CPU", "sandbox.syscalls: seccomp"} {
		assert.Contains(t, string(body), want)
	}
	if os.Getenv("SKILLGATE_REQUIRE_SUBUID") == "1" { // .ci/test-rootless's user has a range
		assert.Contains(t, string(body), "sandbox.uids: sandbox uid 1000 = host uid 100999: subordinate range 100000+65536 via newuidmap")
	}
	if os.Getenv("SKILLGATE_DELEGATED_CGROUP") != "" { // and runs in a delegated cgroup
		assert.Contains(t, string(body), "sandbox.cgroup: cgroup v2: a cgroup per run under "+os.Getenv("SKILLGATE_DELEGATED_CGROUP"))
	}
	c := rpcClient{t: t, url: "http://" + g.addrs["http"] + "/rpc"}
	r := c.run("run_code", `{"language":"python","code":"import os\ndef main(a):\n    return {\"uid\": os.getuid()}"}`)
	assert.Equal(t, "completed", r.Status, "%+v", r.Error)
	assert.JSONEq(t, `{"uid": 1000}`, string(r.Output))
}

func TestServeRefusesAModeItCannotRun(t *testing.T) {
	requireSandbox(t)
	mode := "rootless"
	if os.Geteuid() != 0 {
		mode = "root"
	}
	g := startGateway(t, "--sandbox-mode", mode)
	resp, err := http.Get("http://" + g.addrs["metrics"] + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "sandbox: unavailable: ")
	assert.Contains(t, string(body), mode+" sandbox mode")
	c := rpcClient{t: t, url: "http://" + g.addrs["http"] + "/rpc"}
	_, code := c.call("run_code", `{"language":"python","code":"def main(a):\n    return 1"}`)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code)
}
