package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "root": ModeRoot, " rootless ": ModeRootless} {
		got, err := ParseMode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"Root", "user", "rootless,root", "\x00"} {
		_, err := ParseMode(bad)
		assert.ErrorIs(t, err, errInvalidConfig, bad)
		assert.ErrorContains(t, err, "not auto, root or rootless")
	}
	cfg := DefaultConfig()
	cfg.Mode = "sudo"
	assert.ErrorContains(t, cfg.Validate(), `sandbox mode "sudo"`)
}

func TestResolveMode(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		euid int
		want Mode
		err  string
	}{
		{ModeAuto, 0, ModeRoot, ""},
		{"", 1000, ModeRootless, ""},
		{ModeAuto, 1000, ModeRootless, ""},
		{ModeRoot, 0, ModeRoot, ""},
		{ModeRootless, 1000, ModeRootless, ""},
		{ModeRoot, 1000, "", "root sandbox mode needs root"},
		{ModeRootless, 0, "", "this gateway runs as root"},
	} {
		got, err := resolveMode(tc.mode, tc.euid)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%s as %d", tc.mode, tc.euid)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s as %d", tc.mode, tc.euid)
	}
}

// TestNewRefusesTheWrongMode asks for the mode this process cannot run.
func TestNewRefusesTheWrongMode(t *testing.T) {
	cfg := testConfig()
	cfg.Mode = ModeRootless
	if os.Geteuid() != 0 {
		cfg.Mode = ModeRoot
	}
	_, err := New(cfg)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "mode")
}

func TestCheckWorkDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, checkWorkDir(dir))
	require.NoError(t, os.Chmod(dir, 0o777))
	assert.ErrorContains(t, checkWorkDir(dir), "writable by group or others")
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	assert.ErrorContains(t, checkWorkDir(file), "not a directory")
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(t.TempDir(), link))
	assert.ErrorContains(t, checkWorkDir(link), "is a symbolic link", "a link is not followed")
	assert.ErrorContains(t, checkWorkDir(filepath.Join(dir, "absent")), "work dir")
	if os.Geteuid() != 0 {
		assert.ErrorContains(t, checkWorkDir("/"), "belongs to uid 0 (root)")
	}
}

func TestExplainSpawn(t *testing.T) {
	other := errors.New("boom")
	assert.Equal(t, other, explainSpawn(other))
	err := explainSpawn(&os.SyscallError{Syscall: "clone", Err: unix.EPERM})
	assert.ErrorContains(t, err, "user namespaces")
}

func TestEnforcementReport(t *testing.T) {
	r := &Runner{mode: ModeRootless, ids: ownIDMapper("no range"), cfg: testConfig(), landlockABI: 0, cgroupErr: errors.New("mkdir /sys/fs/cgroup/x: permission denied\nmore")}
	r.cfg.CPUTime = 2 * time.Second
	e := r.describe()
	assert.Equal(t, ModeRootless, e.Mode)
	assert.Contains(t, e.Memory, "RLIMIT_DATA")
	assert.Contains(t, e.Processes, "RLIMIT_NPROC")
	assert.Contains(t, e.CPU, "RLIMIT_CPU per process (2s)")
	assert.Contains(t, e.UIDs, "the gateway's own")
	assert.Contains(t, e.UserCounts, "per run, in its own user namespace: 8 inotify instances")
	text := e.String()
	assert.Contains(t, text, "gap: no Landlock")
	assert.Contains(t, text, "gap: runs share the gateway's uid: no subordinate id range (no range)")
	assert.Contains(t, text, "no writable cgroup (mkdir /sys/fs/cgroup/x: permission denied)")
	assert.NotContains(t, text, "more")
	groups, err := os.Getgroups()
	require.NoError(t, err)
	if slices.ContainsFunc(groups, func(g int) bool { return g != os.Getgid() }) {
		assert.Contains(t, text, "runs keep the gateway's supplementary groups")
	} else {
		assert.NotContains(t, text, "supplementary groups", "none beyond its own group (%v)", groups)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		assert.Regexp(t, `^[a-z_]+: \S`, line)
	}

	r = &Runner{mode: ModeRoot, ids: &idMapper{kind: idMapRange, uid: subRange{defaultUIDBase, uidMapSize}},
		cfg: testConfig(), landlockABI: 6, cgroups: cgroup.NewTreeForTest(true, "/sys/fs/cgroup/gw/skillgate-1-x", []string{"memory", "pids"})}
	e = r.describe()
	assert.Contains(t, e.Memory, "cgroup v2 memory limit per run (128 MiB")
	assert.Contains(t, e.Processes, "cgroup v2 pids limit per run (64")
	assert.Contains(t, e.Filesystem, "Landlock ABI 6")
	assert.Contains(t, e.UIDs, "host uid 1000001000")
	assert.Equal(t, "cgroup v2: a cgroup per run under /sys/fs/cgroup/gw, killed as a whole", e.Cgroup)
	assert.Empty(t, e.Gaps)
	e.Gaps = append(e.Gaps, "x")
	assert.Empty(t, r.describe().Gaps)
}

// TestEnforcementReportPerLimit is a delegated cgroup v2 with the pids
// controller but not memory (bound to cgroup v1 on the host): runs are
// placed in it, processes bounded by it, memory by rlimits.
func TestEnforcementReportPerLimit(t *testing.T) {
	r := &Runner{mode: ModeRootless, ids: ownIDMapper("x"), cfg: testConfig(), landlockABI: 6,
		cgroups: cgroup.NewTreeForTest(true, "/sys/fs/cgroup/d/skillgate-1-x", []string{"pids"})}
	e := r.describe()
	assert.Contains(t, e.Cgroup, "cgroup v2: a cgroup per run under /sys/fs/cgroup/d")
	assert.Contains(t, e.Memory, "rlimit: RLIMIT_DATA")
	assert.Contains(t, e.Processes, "cgroup v2 pids limit per run")
	assert.Contains(t, e.String(), "gap: no memory controller in cgroup v2: memory is bounded per process")
	mem, procs := r.rlimitsFor()
	assert.Equal(t, r.cfg.MemoryBytes, mem)
	assert.Zero(t, procs)

	r.cgroups = cgroup.NewTreeForTest(true, "/sys/fs/cgroup/d/skillgate-1-x", nil)
	e = r.describe()
	assert.Contains(t, e.Processes, "rlimit: RLIMIT_NPROC")
	assert.Contains(t, e.String(), "gap: no memory or pids controller in cgroup v2: processes are bounded by RLIMIT_NPROC")
	mem, procs = r.rlimitsFor()
	assert.Equal(t, r.cfg.MemoryBytes, mem)
	assert.Equal(t, r.cfg.Pids, procs)
}

// TestEnforcementOfThisProcess checks what a real Runner reports: the mode
// follows the uid, and the limit mechanism is the one it uses.
func TestEnforcementOfThisProcess(t *testing.T) {
	r := sharedRunner(t)
	e := r.Enforcement()
	want := ModeRoot
	if os.Geteuid() != 0 {
		want = ModeRootless
	}
	assert.Equal(t, want, e.Mode)
	if r.usesRlimits() {
		assert.Contains(t, e.Memory, enforcedRlimit)
	} else {
		assert.Contains(t, e.Memory, "cgroup")
	}
	e.Gaps = append(e.Gaps, "changed")
	assert.NotContains(t, r.Enforcement().Gaps, "changed", "Enforcement returns a copy")
}

// TestDropCgroupsFallsBackToRlimits is what a rootless Runner does when its
// delegated cgroup fails the self-check: the same Runner passes it again
// with rlimits, and says so.
func TestDropCgroupsFallsBackToRlimits(t *testing.T) {
	r := ownRunner(t, nil)
	if r.usesRlimits() {
		t.Skip("no cgroup here to drop")
	}
	r.dropCgroups(errors.New("the cgroup failed the self-check: attach: permission denied"))
	require.NoError(t, r.selfCheck())
	e := r.describe()
	assert.Contains(t, e.Memory, enforcedRlimit)
	assert.Contains(t, e.String(), "attach: permission denied")
	res := run(t, r, countForksAndThreads, nil)
	assert.Less(t, output(t, res)["processes"], float64(r.cfg.Pids), "rlimits hold")
}

// TestEnforcementReportCPUShare: the cpu line names the quota file and the
// share where the runs' cgroups have the cpu controller, and a gap where a
// share was asked for and cannot be enforced.
func TestEnforcementReportCPUShare(t *testing.T) {
	tree := func(v2 bool, controllers ...string) *cgroup.Tree {
		return cgroup.NewTreeForTest(v2, "/sys/fs/cgroup/d/skillgate-1-x", controllers)
	}
	r := &Runner{mode: ModeRoot, ids: ownIDMapper("x"), cfg: testConfig(), landlockABI: 6,
		cgroups: tree(true, "memory", "pids", "cpu")}
	r.cfg.CPUs = 1.5
	e := r.describe()
	assert.Contains(t, e.CPU, "; cgroup v2 cpu.max per run: at most 1.5 CPUs")
	assert.NotContains(t, e.String(), "gap: no cpu")

	r.cgroups = tree(false, "memory", "pids", "cpu")
	assert.Contains(t, r.describe().CPU, "; cgroup v1 CFS quota (cpu.cfs_quota_us) per run: at most 1.5 CPUs")

	r.cfg.CPUs = 0
	r.cgroups = tree(true, "memory", "pids", "cpu")
	assert.Contains(t, r.describe().CPU, "cpu.max per run: no share limit (a skill's [runtime] cpus sets one)")

	r.cgroups = tree(true, "memory", "pids")
	e = r.describe()
	assert.Contains(t, e.CPU, "; no CPU share limit")
	assert.NotContains(t, e.String(), "gap: no cpu", "none asked for: no gap")
	r.cfg.CPUs = 0.5
	assert.Contains(t, r.describe().String(), "gap: no cpu controller in cgroup v2: a run's CPU share is not limited (asked for 0.5 CPUs)")

	r.cgroups, r.mode = nil, ModeRootless
	assert.Contains(t, r.describe().String(), "gap: no writable cgroup: a run's CPU share is not limited (asked for 0.5 CPUs)")
}
