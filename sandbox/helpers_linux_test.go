package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// requireSandbox skips (or, with SKILLGATE_REQUIRE_SANDBOX=1, fails) when
// isolation cannot work here.
func requireSandbox(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("SKILLGATE_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("sandbox required but unavailable: %v", err)
	}
	t.Skipf("sandbox unavailable: %v", err)
}

// testConfig is small and quick: abuse tests hit the limits in well under
// a second.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Workers = 4
	cfg.WarmPool = 2
	cfg.DefaultTimeout = 10 * time.Second * timeScale
	cfg.TmpBytes = 8 << 20
	cfg.WorkspaceBytes = 8 << 20
	cfg.FileSizeBytes = 4 << 20
	cfg.MemoryBytes = 128 << 20
	cfg.LogsHardCap = 256 << 10
	// The template unless SKILLGATE_SANDBOX_TEMPLATE says otherwise; never
	// auto, whose fallback would hide a template that fails.
	cfg.Template = TemplateOn
	if m, err := ParseTemplateMode(os.Getenv("SKILLGATE_SANDBOX_TEMPLATE")); err == nil && m != TemplateAuto {
		cfg.Template = m
	}
	return cfg
}

var (
	uidOffset atomic.Uint32
	shared    struct {
		once sync.Once
		r    *Runner
		err  error
	}
)

// sharedRunner is one warm Runner for the functional tests.
func sharedRunner(t testing.TB) *Runner {
	t.Helper()
	shared.once.Do(func() { shared.r, shared.err = New(testConfig()) })
	requireSandbox(t, shared.err)
	return shared.r
}

// closeSharedRunner closes the shared Runner and reports what it left.
func closeSharedRunner() error {
	if shared.r == nil {
		return nil
	}
	if err := shared.r.Close(); err != nil {
		return err
	}
	if left := leftovers(shared.r); len(left) > 0 {
		return fmt.Errorf("the shared runner left %v", left)
	}
	return nil
}

// ownRunner starts a Runner of its own with a uid range no other Runner of
// the tests uses, so that leftover processes can be attributed; it is
// closed (and checked clean) when the test ends.
func ownRunner(t testing.TB, edit func(*Config)) *Runner {
	t.Helper()
	return hookedRunner(t, testHooks{}, edit)
}

// hookedRunner is ownRunner with test hooks.
func hookedRunner(t testing.TB, hooks testHooks, edit func(*Config)) *Runner {
	t.Helper()
	cfg := testConfig()
	cfg.WarmPool = 0
	cfg.UIDBase = defaultUIDBase + uidOffset.Add(1)*uidMapSize
	if edit != nil {
		edit(&cfg)
	}
	r, err := newHooked(cfg, hooks)
	requireSandbox(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		assertGone(t, r)
	})
	return r
}

// run runs code with args and returns the result.
func run(t testing.TB, r *Runner, code string, args any, edit ...func(*Job)) *Result {
	t.Helper()
	job := Job{RunID: t.Name(), Code: code}
	if args != nil {
		data, err := json.Marshal(args)
		require.NoError(t, err)
		job.Args = data
	}
	for _, e := range edit {
		e(&job)
	}
	res, err := r.Run(context.Background(), job)
	require.NoError(t, err)
	return res
}

func withTimeout(d time.Duration) func(*Job) { return func(j *Job) { j.Timeout = d * timeScale } }

// timeScale stretches the runs' timeouts where every instruction is slow:
// SKILLGATE_TEST_TIME_SCALE, set by the cgroup v2 stage when its VM is
// emulated (TCG). Default 1.
var timeScale = func() time.Duration {
	n, err := strconv.Atoi(os.Getenv("SKILLGATE_TEST_TIME_SCALE"))
	if err != nil || n < 1 {
		return 1
	}
	return time.Duration(min(n, 20))
}()

// requireCompleted fails with the run's error and logs.
func requireCompleted(t testing.TB, res *Result) {
	t.Helper()
	if res.Status != StatusCompleted {
		t.Fatalf("run failed: %+v\nlogs:\n%s", res.Error, res.Logs)
	}
}

// output decodes the run's output into a map.
func output(t testing.TB, res *Result) map[string]any {
	t.Helper()
	requireCompleted(t, res)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.Output, &m))
	return m
}

func requireFailed(t testing.TB, res *Result, kind string) {
	t.Helper()
	require.Equal(t, StatusFailed, res.Status, "output %s logs %s", res.Output, res.Logs)
	require.NotNil(t, res.Error)
	require.Equal(t, kind, res.Error.Type, "message %q logs %s", res.Error.Message, res.Logs)
}

const trivialCode = "def main(args):\n    return {'ok': True}\n"

// assertHealthyAndClean runs a trivial job, then checks that nothing of
// the earlier runs is left: no process in the Runner's uid range, no
// cgroup, no sandbox directory. With a warm pool the pool's sandboxes are
// legitimately there; ownRunner checks again after Close.
func assertHealthyAndClean(t *testing.T, r *Runner) {
	t.Helper()
	res := run(t, r, trivialCode, nil)
	requireCompleted(t, res)
	waitIdle(t, r)
	if r.cfg.WarmPool == 0 {
		assertGone(t, r)
	}
}

// waitIdle waits (bounded) until no run holds a worker and no sandbox
// start is under way: teardown is done.
func waitIdle(t testing.TB, r *Runner) {
	t.Helper()
	// Starts under way count too: a run that found the pool empty may have
	// left one that is still being pooled or torn down.
	require.Eventually(t, func() bool { s := r.Stats(); return s.Running == 0 && s.Starting == 0 }, 30*time.Second, 5*time.Millisecond)
}

// assertGone checks the leftovers of an idle Runner without a warm pool
// (after Close: of any Runner).
func assertGone(t testing.TB, r *Runner) {
	t.Helper()
	assert.Empty(t, leftovers(r))
}

// leftovers lists what a Runner left behind: its processes, child
// cgroups, sandbox directories, host mounts under WorkDir.
func leftovers(r *Runner) []string {
	var out []string
	for _, p := range runnerProcesses(r.name) {
		out = append(out, "process "+p)
	}
	if r.cgroups != nil {
		for _, root := range r.cgroups.Roots() {
			children, _ := os.ReadDir(root)
			for _, c := range children {
				if c.IsDir() {
					out = append(out, "cgroup "+filepath.Join(root, c.Name()))
				}
			}
		}
	}
	entries, _ := os.ReadDir(r.dir)
	for _, e := range entries {
		if e.Name() != "lib" && e.Name() != "etc" {
			out = append(out, "directory "+filepath.Join(r.dir, e.Name()))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), r.cfg.WorkDir) {
		out = append(out, "host mount under "+r.cfg.WorkDir)
	}
	return out
}

// runnerProcesses lists the host processes of the Runner called name: its
// sandboxes' pid 1s (their command line carries the name) and every
// process below them. Orphans inside a sandbox are re-parented to its
// pid 1, so nothing of a live sandbox escapes the walk, and nothing
// outlives a dead pid 1 (the kernel kills its pid namespace). Neither the
// uid (rootless: the gateway's own) nor a uid range (shared by other
// Runners on the machine) attributes a process to one Runner.
func runnerProcesses(name string) []string {
	parent := map[int]int{}
	var roots []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		parent[pid] = statusField(string(status), "PPid:")
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), wire.InitVerb+"\x00"+name) {
			roots = append(roots, pid)
		}
	}
	var out []string
	for pid := range parent {
		for p, hops := pid, 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if slices.Contains(roots, p) {
				out = append(out, fmt.Sprintf("pid %d (sandbox pid 1: %d)", pid, p))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func statusField(status, key string) int {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
