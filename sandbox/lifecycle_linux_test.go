package sandbox

import (
	"bufio"
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
		for _, root := range r.cgroups.roots {
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
