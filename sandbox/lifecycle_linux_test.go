package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGatewayEnv makes the test binary a gateway with a warm pool that
// prints its Runner's name and waits to be killed.
const fakeGatewayEnv = "SKILLGATE_SANDBOX_TEST_GATEWAY"

// fakeGatewayWorkDirEnv names the fake gateway's WorkDir: a directory of
// its test's own, so that Runners of other test processes, which sweep
// what dead Runners leave in the shared WorkDir, cannot remove it first.
const fakeGatewayWorkDirEnv = "SKILLGATE_SANDBOX_TEST_WORKDIR"

func runFakeGateway() {
	cfg := testConfig()
	base, _ := strconv.ParseUint(os.Getenv(fakeGatewayEnv), 10, 32)
	cfg.UIDBase, cfg.WarmPool = uint32(base), 2
	cfg.WorkDir = os.Getenv(fakeGatewayWorkDirEnv)
	r, err := New(cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for r.Stats().WarmReady < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("ready", r.name)
	select {}
}

// TestGatewayDeathKillsSandboxes kills a gateway holding warm sandboxes:
// they die with it (Pdeathsig, and pid 1's control pipe reaching EOF), and
// the next Runner removes what the dead one left (cgroups, directories).
func TestGatewayDeathKillsSandboxes(t *testing.T) {
	requireSandbox(t, CheckIsolation(testConfig()))
	base := defaultUIDBase + uidOffset.Add(1)*uidMapSize
	workDir, err := os.MkdirTemp("", "skillgate-lifecycle-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(workDir) })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeGatewayEnv+"="+strconv.FormatUint(uint64(base), 10), fakeGatewayWorkDirEnv+"="+workDir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	name, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	require.True(t, ok, line)
	require.Len(t, runnerProcesses(name), 4, "two warm sandboxes: pid 1 and Python each")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return len(runnerProcesses(name)) == 0 }, 20*time.Second, 10*time.Millisecond,
		"sandboxes outlived their gateway: %v", runnerProcesses(name))

	stale := filepath.Join(workDir, name)
	require.DirExists(t, stale)
	r := ownRunner(t, func(c *Config) { c.WorkDir = workDir }) // sweeps what dead Runners left
	assert.NoDirExists(t, stale)
	if r.cgroups != nil {
		for _, root := range r.cgroups.Roots() {
			assert.NoDirExists(t, filepath.Join(filepath.Dir(root), name))
		}
	}
}

// TestDeadWarmSandboxIsNotUsed kills the Python of a pooled sandbox: the
// sandbox no longer counts as idle, and runs still succeed.
func TestDeadWarmSandboxIsNotUsed(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.WarmPool = 1 })
	var sb *sandbox
	select {
	case sb = <-r.pool:
	case <-time.After(30 * time.Second):
		t.Fatal("the pool was not filled")
	}
	defer r.teardown(sb)
	require.True(t, sb.idle())
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sb.pid, sb.pid))
	require.NoError(t, err)
	python, err := strconv.Atoi(strings.TrimSpace(string(children)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(python, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !sb.idle() }, 20*time.Second, time.Millisecond)
	assertHealthyAndClean(t, r)
}

// orphansCode double-forks n times: each grandchild outlives its parent
// and is re-parented to pid 1, which must reap it. More orphans than the
// run's process limit (Pids, and RLIMIT_NPROC where that stands in)
// leave zombies that fail a fork unless pid 1 reaps them as they come.
// Every grandchild holds the write end of a pipe, so its end of file says
// they have all exited; only then is the process table read, and the
// answer is the last reading, since an orphan is a zombie for the moment
// between its exit and pid 1's wait.
const orphansCode = `import os, time

def zombies():
    found = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(')') + 2] == 'Z':
            found.append(int(d))
    return found

def main(args):
    exited, alive = os.pipe()
    for _ in range(args['n']):
        child = os.fork()
        if child == 0:
            os.close(exited)
            if os.fork() == 0:
                time.sleep(0.001)
            os._exit(0)
        os.waitpid(child, 0)
    os.close(alive)
    os.read(exited, 1)
    deadline = time.monotonic() + 30
    found = zombies()
    while found and time.monotonic() < deadline:
        time.sleep(0.01)
        found = zombies()
    return {"zombies": found}
`

// TestOrphansAreReaped: pid 1 reaps the processes re-parented to it, from
// the template and from scratch alike.
func TestOrphansAreReaped(t *testing.T) {
	for _, mode := range []TemplateMode{TemplateOn, TemplateOff} {
		t.Run(string(mode), func(t *testing.T) {
			r := ownRunner(t, func(c *Config) { c.Template, c.WarmPool = mode, 0 })
			// A bound for a loaded host, not a time the test expects:
			// 128 forks of Python take well under a second when it is quiet.
			res := run(t, r, orphansCode, map[string]int{"n": 2 * r.cfg.Pids}, withTimeout(2*time.Minute))
			requireCompleted(t, res)
			assert.JSONEq(t, `{"zombies": []}`, string(res.Output))
		})
	}
}

// listJobCode returns every path under /job.
const listJobCode = `import os

def main(args):
    found = []
    for top, dirs, files in os.walk('/job'):
        found += [os.path.join(top, n) for n in dirs + files]
    return sorted(found)
`

// TestReusedDirectoryIsEmpty: a template sandbox's host directory goes
// back, emptied, to the next sandbox of a Runner with a warm pool. The
// run that had files there (an input blob) leaves none to the sandbox
// that gets its directory.
func TestReusedDirectoryIsEmpty(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Template, c.WarmPool = TemplateOn, 1 })
	start := func() *sandbox {
		sb, err := r.spawn(false, Environment{})
		require.NoError(t, err)
		return sb
	}
	runIn := func(sb *sandbox, job Job) *Result {
		p, err := newPlan(r.cfg, job)
		require.NoError(t, err)
		res, err := sb.run(context.Background(), r.closing, p, &r.cfg)
		require.NoError(t, err)
		requireCompleted(t, res)
		return res
	}
	first := start()
	res := runIn(first, Job{RunID: "files", Code: listJobCode,
		InputBlobs: []InputBlob{{ID: "blob:in", Kind: "text/plain", Data: []byte("secret of the first run")}}})
	require.Contains(t, string(res.Output), "/job/blobs/in")
	r.teardown(first)
	// The first start after the teardown may take the directory made
	// ahead before it; one of the next few takes the emptied one.
	for range 4 {
		sb := start()
		reused := sb.dir == first.dir
		res := runIn(sb, Job{RunID: "list", Code: listJobCode})
		r.teardown(sb)
		if reused {
			assert.JSONEq(t, `[]`, string(res.Output), "what the earlier run had in /job")
			return
		}
	}
	t.Fatal("no sandbox got the emptied directory")
}
