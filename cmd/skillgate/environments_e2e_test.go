package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/pyenv/pyenvtest"
)

// envWheelhouse holds acme-tool 1.0.0 and 2.0.0, acme-base 3.0.0 and an
// sdist-only acme-src: the sources of the environment tests.
func envWheelhouse(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(pyenv.DefaultPython); err != nil {
		t.Skip("no " + pyenv.DefaultPython)
	}
	wh, err := pyenvtest.Wheelhouse(t.TempDir(),
		pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-tool", Version: "2.0.0"},
		pyenvtest.Wheel{Name: "acme-base", Version: "3.0.0"})
	require.NoError(t, err)
	_, err = pyenvtest.WriteSdist(wh, "acme-src", "1.0")
	require.NoError(t, err)
	return wh
}

// writeEnvSkill writes an action skill whose main returns what its
// environment gives it: acme_tool's version and where it came from.
func writeEnvSkill(t *testing.T, root, name, runtimeLines string, extra map[string]string) {
	t.Helper()
	dir := filepath.Join(root, name)
	files := map[string]string{
		"skill.toml": fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Test.\"\nkind = \"action\"\n[runtime]\n"+
			"language = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n%s\n", name, runtimeLines),
		"SKILL.md": "---\nname: T\nshort_description: T.\n---\nT\n",
		"code/main.py": "import subprocess, sys\n" +
			"def main(args):\n" +
			"    import acme_tool\n" +
			"    sub = subprocess.run([sys.executable, '-c', 'import acme_tool; print(acme_tool.__version__)'], capture_output=True, text=True)\n" +
			"    try:\n" +
			"        import acme_base\n" +
			"        base = acme_base.__version__\n" +
			"    except ImportError:\n" +
			"        base = None\n" +
			"    return {'version': acme_tool.__version__, 'subprocess': sub.stdout.strip() or sub.stderr[-300:], 'base': base}\n",
	}
	for p, data := range extra {
		files[p] = data
	}
	for p, data := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
}

var buildsLine = regexp.MustCompile(`(?m)^skillgate_skill_environment_builds_total\{result="(ok|failed)"\} (\d+)$`)

// envBuilds reads skillgate_skill_environment_builds_total by result.
func envBuilds(t *testing.T, g *gatewayProcess) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range buildsLine.FindAllStringSubmatch(scrape(t, "http://"+g.addrs["metrics"]+"/metrics"), -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

// waitBuilds waits until n builds ended, draining the gateway's log
// meanwhile (a full log pipe would stall it); it returns the lines read,
// those of the gateway's start first (a build can fail before it is ready).
func waitBuilds(t *testing.T, g *gatewayProcess, n int) []map[string]any {
	t.Helper()
	logs := g.takeStartup()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		b := envBuilds(t, g)
		if b["ok"]+b["failed"] >= n {
			break
		}
		require.True(t, time.Now().Before(deadline), "builds did not end: %v", b)
		logs = append(logs, drainLogs(g, 200*time.Millisecond)...)
	}
	// The catalog swap follows the metric by a moment.
	return append(logs, drainLogs(g, 300*time.Millisecond)...)
}

func drainLogs(g *gatewayProcess, d time.Duration) []map[string]any {
	var out []map[string]any
	timer := time.After(d)
	for {
		select {
		case rec, ok := <-g.logs:
			if !ok {
				return out
			}
			out = append(out, rec)
		case <-timer:
			return out
		}
	}
}

// failedBuild finds the log line of a skill whose build failed.
func failedBuild(logs []map[string]any, name string) string {
	for _, rec := range logs {
		if rec["message"] == "skill environment build failed; skill skipped" && rec["name"] == name {
			b, _ := json.Marshal(rec["violations"])
			return string(b)
		}
	}
	return ""
}

type describedEnv struct {
	Skill struct {
		Environment *struct {
			Requirements []string     `json:"requirements"`
			Installed    []pyenv.Dist `json:"installed"`
		} `json:"environment"`
	} `json:"skill"`
}

func (c rpcClient) installed(name string) []pyenv.Dist {
	c.t.Helper()
	res, code := c.call("describe_skill", `{"name":"`+name+`"}`)
	require.Empty(c.t, code, name)
	var d describedEnv
	require.NoError(c.t, json.Unmarshal(res, &d))
	require.NotNil(c.t, d.Skill.Environment, name)
	return d.Skill.Environment.Installed
}

func TestEnvironmentsBuiltByTheGateway(t *testing.T) {
	wh := envWheelhouse(t)
	root := t.TempDir()
	writeEnvSkill(t, root, "acme.tool.one", `requirements = ["acme-tool==1.0.0"]`, nil)
	writeEnvSkill(t, root, "acme.tool.two", `requirements = ["acme-tool==2.0.0"]`, nil)
	writeEnvSkill(t, root, "acme.tool.bad", `requirements = ["acme-tool==9.9"]`, nil)
	writeEnvSkill(t, root, "acme.tool.src", `requirements = ["acme-src==1.0"]`, nil)
	writeEnvSkill(t, root, "acme.tool.hash", "", map[string]string{
		"requirements.txt": "acme-tool==1.0.0 --hash=sha256:" + strings.Repeat("0", 64) + "\n"})
	g := startGateway(t, "--skills-dir", root, "--data-dir", pyenvtest.DataDir(t), "--python-find-links", wh)
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	logs := waitBuilds(t, g, 5)
	assert.Equal(t, map[string]int{"ok": 2, "failed": 3}, envBuilds(t, g))

	assert.Equal(t, []pyenv.Dist{{Name: "acme-tool", Version: "1.0.0"}}, c.installed("acme.tool.one"))
	assert.Equal(t, []pyenv.Dist{{Name: "acme-tool", Version: "2.0.0"}}, c.installed("acme.tool.two"), "two versions of one package in one gateway")
	for name, reason := range map[string]string{
		"acme.tool.bad":  "No matching distribution found for acme-tool==9.9",
		"acme.tool.src":  "acme-src is offered only as a source distribution (acme-src-1.0.tar.gz)",
		"acme.tool.hash": "THESE PACKAGES DO NOT MATCH THE HASHES",
	} {
		_, code := c.call("describe_skill", `{"name":"`+name+`"}`)
		assert.Equal(t, "SKILL_NOT_FOUND", code, "%s is skipped", name)
		assert.Contains(t, failedBuild(logs, name), reason, name)
	}
	assert.NoFileExists(t, "/tmp/sdist-built-acme-src", "nothing of the sdist ran")

	res, code := c.call("list_skills", `{"namespace":"acme.tool"}`)
	require.Empty(t, code)
	assert.Contains(t, string(res), "acme.tool.one")
	assert.NotContains(t, string(res), "acme.tool.bad")
}

func TestEnvironmentsReloadAndRestart(t *testing.T) {
	wh := envWheelhouse(t)
	root, data := t.TempDir(), pyenvtest.DataDir(t)
	writeEnvSkill(t, root, "acme.tool.one", `requirements = ["acme-tool==1.0.0"]`, nil)
	args := []string{"--skills-dir", root, "--data-dir", data, "--python-find-links", wh, "--watch-skills=false"}
	g := startGateway(t, args...)
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	waitBuilds(t, g, 1)
	require.Equal(t, "1.0.0", c.installed("acme.tool.one")[0].Version)
	envs := filepath.Join(data, "envs")
	before, err := os.ReadDir(envs)
	require.NoError(t, err)
	require.Len(t, before, 1)

	// A changed requirement: a new environment, the old one removed.
	writeEnvSkill(t, root, "acme.tool.one", `requirements = ["acme-tool==2.0.0"]`, nil)
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGHUP))
	waitBuilds(t, g, 2)
	require.Equal(t, "2.0.0", c.installed("acme.tool.one")[0].Version)
	after, err := os.ReadDir(envs)
	require.NoError(t, err)
	require.Len(t, after, 1)
	assert.NotEqual(t, before[0].Name(), after[0].Name())
	stopGateway(g.cmd)

	// A restart finds the environment built: offered at once, no pip run.
	g = startGateway(t, args...)
	c = rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	require.Equal(t, "2.0.0", c.installed("acme.tool.one")[0].Version)
	assert.Empty(t, envBuilds(t, g)["ok"]+envBuilds(t, g)["failed"], "nothing rebuilt")
}

func TestSkillCheckBuildsEnvironments(t *testing.T) {
	wh := envWheelhouse(t)
	root := t.TempDir()
	writeEnvSkill(t, root, "acme.tool.one", `requirements = ["acme-tool==1.0.0"]`, nil)
	writeEnvSkill(t, root, "acme.tool.bad", `requirements = ["acme-tool==9.9"]`, nil)

	out, stderr, code := runCLI(t, "skill", "check", root)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "the gateway has no package source: start it with --python-find-links")
	assert.Contains(t, stderr, "2 packages: 0 valid")

	out, stderr, code = runCLI(t, "skill", "check", "--python-find-links", wh, root)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "No matching distribution found for acme-tool==9.9")
	assert.NotContains(t, out, "acme.tool.one")
	assert.Contains(t, stderr, "2 packages: 1 valid")

	out, _, code = runCLI(t, "skill", "check", "--python-find-links", wh, filepath.Join(root, "acme.tool.one"))
	assert.Equal(t, 0, code, out)
}

func TestServeRefusesABadBaseRequirementsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "base.txt")
	require.NoError(t, os.WriteFile(file, []byte("acme-tool\n--index-url https://pypi.org/simple\n"), 0o600))
	_, stderr, code := runCLI(t, "serve", "--python-requirements", file, "--python-find-links", t.TempDir(), "--http-listen", "", "--listen", "127.0.0.1:0", "--metrics-listen", "")
	assert.NotZero(t, code)
	assert.Contains(t, stderr, "line 2: option --index-url is not accepted here")
}

func TestEnvironmentsInRuns(t *testing.T) {
	requireSandbox(t)
	wh := envWheelhouse(t)
	root := t.TempDir()
	writeEnvSkill(t, root, "acme.tool.one", `requirements = ["acme-tool==1.0.0"]`+"\npreload = [\"acme_tool\"]", nil)
	writeEnvSkill(t, root, "acme.tool.two", "", map[string]string{"requirements.txt": "acme-tool==2.0.0\n"})
	base := filepath.Join(t.TempDir(), "base.txt")
	require.NoError(t, os.WriteFile(base, []byte("acme-base==3.0.0\n"), 0o600))
	g := startGateway(t, "--skills-dir", root, "--data-dir", pyenvtest.DataDir(t), "--python-find-links", wh,
		"--python-requirements", base, "--python-preload", "acme_base", "--sandbox-workers", "2")
	c := rpcClient{t, "http://" + g.addrs["http"] + "/rpc"}
	waitBuilds(t, g, 3)

	// Each skill sees its own version, in its process and in a
	// subprocess, and the base environment behind its own.
	r := c.run("execute_skill", `{"name":"acme.tool.one"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"version":"1.0.0","subprocess":"1.0.0","base":"3.0.0"}`, string(r.Output))
	r = c.run("execute_skill", `{"name":"acme.tool.two"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"version":"2.0.0","subprocess":"2.0.0","base":"3.0.0"}`, string(r.Output))

	// run_code sees the base environment, and the environments of the
	// skills it mounts.
	r = c.run("run_code", `{"language":"python","code":"import acme_base\ndef main(args):\n    try:\n        import acme_tool\n        tool = acme_tool.__version__\n    except ImportError:\n        tool = None\n    return {'base': acme_base.__version__, 'tool': tool}"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"base":"3.0.0","tool":null}`, string(r.Output))
	r = c.run("run_code", `{"language":"python","mount_skills":["acme.tool.two"],"code":"import acme_base, acme_tool\ndef main(args):\n    return {'base': acme_base.__version__, 'tool': acme_tool.__version__}"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.JSONEq(t, `{"base":"3.0.0","tool":"2.0.0"}`, string(r.Output))

	// python3 started from a bash run sees them too.
	r = c.run("run_code", `{"language":"bash","mount_skills":["acme.tool.one"],"code":"python3 -c 'import acme_base, acme_tool; print(\"versions\", acme_base.__version__, acme_tool.__version__)'"}`)
	require.Equal(t, "completed", r.Status, "%+v", r)
	assert.Contains(t, r.LogsPreview, "versions 3.0.0 1.0.0")

	// /readyz says so (its details follow the build by a moment).
	ready := regexp.MustCompile(`python.base_environment: ready: [0-9a-f]{32}, 1 distributions`)
	for i := 0; i < 50 && !ready.MatchString(scrape(t, "http://"+g.addrs["metrics"]+"/readyz")); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	assert.Regexp(t, ready, scrape(t, "http://"+g.addrs["metrics"]+"/readyz"))

	// Two mounted skills that disagree on a version cannot share a run.
	_, code := c.call("run_code", `{"language":"python","code":"def main(a): pass","mount_skills":["acme.tool.one","acme.tool.two"]}`)
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", code)
}
