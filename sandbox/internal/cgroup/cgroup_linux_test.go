package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hybridSelf = `9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
2:cpu,cpuacct:/
0::/
`

const hybridMounts = `30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
31 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:10 - cgroup cgroup rw,memory
32 25 0:28 / /sys/fs/cgroup/pids rw,relatime shared:11 - cgroup cgroup rw,pids
33 25 0:29 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw
`

func TestDetectCgroups(t *testing.T) {
	l, err := detectCgroups(hybridSelf, hybridMounts)
	require.NoError(t, err)
	assert.False(t, l.v2)
	assert.Equal(t, map[string]string{
		"memory": "/sys/fs/cgroup/memory/process_api/abc",
		"pids":   "/sys/fs/cgroup/pids",
	}, l.dirs)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct", l.cpuDir, "the optional cpu hierarchy")
	l, err = detectCgroups("8:pids:/\n4:memory:/\n", hybridMounts)
	require.NoError(t, err)
	assert.Empty(t, l.cpuDir, "no cpu line in /proc/self/cgroup")

	l, err = detectCgroups("0::/system.slice/skillgate.service\n",
		"40 1 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
	require.NoError(t, err)
	assert.True(t, l.v2)
	assert.Equal(t, "/sys/fs/cgroup/system.slice/skillgate.service", l.dir)

	// A container whose cgroup mount is rooted at its own cgroup.
	l, err = detectCgroups("0::/kubepods/pod1/c1\n",
		"40 1 0:30 /kubepods/pod1/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup", l.dir)

	_, err = detectCgroups("4:memory:/\n", "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
	assert.ErrorContains(t, err, "no pids cgroup controller")
	_, err = detectCgroups("", "")
	assert.ErrorContains(t, err, "no memory cgroup controller")
}

func TestParseMountEscapes(t *testing.T) {
	m := parseCgroupMounts(`40 1 0:30 / /sys/fs/with\040space rw shared:1 master:2 - cgroup2 none rw` + "\n")
	require.Len(t, m, 1)
	assert.Equal(t, "/sys/fs/with space", m[0].point)
	assert.Empty(t, parseCgroupMounts("garbage\n1 2 3\n"))
}

func TestParseKeyed(t *testing.T) {
	assert.Equal(t, int64(3), parseKeyed("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill"))
	assert.Equal(t, int64(0), parseKeyed("low 0\n", "oom_kill"))
}

func TestStaleName(t *testing.T) {
	assert.False(t, StaleName("other"))
	assert.False(t, StaleName(Prefix+"gateway"))
	assert.False(t, StaleName(Prefix+"1-x"), "pid 1 is alive")
	assert.True(t, StaleName(Prefix+"2147483646-x"), "no such pid")
}

func FuzzDetectCgroups(f *testing.F) {
	f.Add(hybridSelf, hybridMounts)
	f.Add("0::/a\n", "1 1 0:1 /a /c rw - cgroup2 x rw\n")
	f.Add("::\n:::\n", `1 1 1 \1 \999 - cgroup`)
	f.Add("cgroup_favordynmods=true", "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,favordynmods\n")
	f.Fuzz(func(t *testing.T, self, mounts string) {
		// The same mountinfo, and the other text as a kernel command line:
		// the host check reads both and must never fail on them.
		if favorsDynmods(mounts, self) {
			assert.True(t, strings.Contains(mounts, "favordynmods") || strings.Contains(self, "cgroup_favordynmods="),
				"said yes without the option")
		}
		l, err := detectCgroups(self, mounts)
		if err != nil {
			return
		}
		if l.v2 {
			assert.NotEmpty(t, l.dir)
		} else {
			assert.Len(t, l.dirs, len(requiredControllers))
		}
	})
}

// fakeCgroupDir makes a directory with the given cgroup files (empty):
// enough to check what the v2 code writes where.
func fakeCgroupDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

func TestV2Base(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": ""})
	base, avail, err := v2Base(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, base)
	assert.Equal(t, []string{"memory", "pids", "cpu"}, avail)
	got, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	// A plain file keeps the tail of the longer first write: memory and
	// pids first, then cpu on its own.
	assert.Equal(t, "+cpu"+"ory +pids", string(got))

	// A delegated cgroup on a host that keeps memory in cgroup v1.
	dir = fakeCgroupDir(t, map[string]string{"cgroup.controllers": "cpuset pids\n", "cgroup.subtree_control": ""})
	_, avail, err = v2Base(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"pids"}, avail)
	got, _ = os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	assert.Equal(t, "+pids", string(got))

	// Neither: runs are still placed (and killed) there; nothing to enable.
	dir = fakeCgroupDir(t, map[string]string{"cgroup.controllers": "hugetlb\n"})
	base, avail, err = v2Base(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, base)
	assert.Empty(t, avail)
	assert.NoFileExists(t, filepath.Join(dir, "cgroup.subtree_control"))

	// A process already in its leaf uses the directory above it, not a
	// leaf of the leaf.
	leaf := filepath.Join(dir, gatewayLeaf)
	require.NoError(t, os.Mkdir(leaf, 0o755))
	base, _, err = v2Base(leaf)
	require.NoError(t, err)
	assert.Equal(t, dir, base)

	_, _, err = v2Base(filepath.Join(dir, "absent"))
	assert.ErrorContains(t, err, "no such file")
}

// TestV2Given: a given directory is used as it is, never its parent; the
// case where processes stand in the way needs a real cgroup
// (TestGivenCgroupNeverLeaves).
func TestV2Given(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": ""})
	base, avail, err := v2Given(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, base)
	assert.Equal(t, []string{"memory", "pids", "cpu"}, avail)

	dir = fakeCgroupDir(t, map[string]string{"cgroup.controllers": "io\n"})
	base, avail, err = v2Given(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, base, "no controllers: runs are still placed there")
	assert.Empty(t, avail)

	_, _, err = v2Given(filepath.Join(dir, "absent"))
	assert.ErrorContains(t, err, "no such file")
}

func TestEnableControllers(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.subtree_control": ""})
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	got, err := enableControllers(ctl, []string{"cpu"})
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu"}, got, "cpu alone")

	// The kernel refusing cpu leaves runs without a CPU share limit; a
	// directory (not a file) stands in for the refusal.
	bad := t.TempDir()
	got, err = enableControllers(bad, []string{"cpu"})
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = enableControllers(bad, []string{"memory", "cpu"})
	assert.Error(t, err, "memory is required")
}

func TestCPUQuota(t *testing.T) {
	for cpus, want := range map[float64]int64{0: 0, -1: 0, 0.01: 1000, 0.001: 1000, 0.5: 50_000, 1.5: 150_000, 2: 200_000, 0.333333: 33_333} {
		assert.Equal(t, want, cpuQuota(cpus), "%v CPUs", cpus)
	}
}

func TestRunCgroupCPUs(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cpu.max": "", "memory.max": "", "pids.max": ""})
	cg := &Run{v2: true, dirs: []string{dir}, controllers: wantedControllers, cpuDir: dir}
	require.NoError(t, cg.limit(Limits{Memory: 1 << 20, Pids: 9, CPUs: 1.5}))
	got, _ := os.ReadFile(filepath.Join(dir, "cpu.max"))
	assert.Equal(t, "150000 100000", string(got))
	require.NoError(t, os.Truncate(filepath.Join(dir, "cpu.max"), 0)) // a real cgroup file takes each write whole
	require.NoError(t, cg.SetCPUs(0))
	got, _ = os.ReadFile(filepath.Join(dir, "cpu.max"))
	assert.Equal(t, "max 100000", string(got))
	assert.Equal(t, int64(-1), cg.CPUUsage(), "no cpu.stat")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 1234\nuser_usec 1000\n"), 0o644))
	assert.Equal(t, int64(1234), cg.CPUUsage())

	v1 := fakeCgroupDir(t, map[string]string{"cpu.cfs_quota_us": "", "cpu.cfs_period_us": "", "cpuacct.usage": "5000000\n"})
	cg = &Run{dirs: []string{v1, v1, v1}, cpuDir: v1}
	require.NoError(t, cg.SetCPUs(0.25))
	for file, want := range map[string]string{"cpu.cfs_quota_us": "25000", "cpu.cfs_period_us": "100000"} {
		got, _ := os.ReadFile(filepath.Join(v1, file))
		assert.Equal(t, want, string(got), file)
	}
	require.NoError(t, os.Truncate(filepath.Join(v1, "cpu.cfs_quota_us"), 0))
	require.NoError(t, cg.SetCPUs(0))
	got, _ = os.ReadFile(filepath.Join(v1, "cpu.cfs_quota_us"))
	assert.Equal(t, "-1", string(got))
	assert.Equal(t, int64(5000), cg.CPUUsage())

	// Without the controller nothing is written, nothing fails.
	cg = &Run{v2: true, dirs: []string{t.TempDir()}}
	require.NoError(t, cg.SetCPUs(2))
	assert.Equal(t, int64(-1), cg.CPUUsage())
	assert.ErrorContains(t, (&Run{v2: true, cpuDir: filepath.Join(dir, "absent")}).SetCPUs(1), "cpu.max")
}

func TestDescribeProcs(t *testing.T) {
	self := describeProcs([]int{os.Getpid()})
	assert.Regexp(t, `^pid \d+ \(.+\)$`, self)
	assert.Equal(t, "pid 2147483646 (?)", describeProcs([]int{2147483646}))
	many := describeProcs([]int{1, 2, 3, 4, 5, 6, 7})
	assert.True(t, strings.HasSuffix(many, "and 2 more"), many)
}

func TestCgroupMembers(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.procs": "12\n" + strconv.Itoa(os.Getpid()) + "\n40\n"})
	others, self := cgroupMembers(dir)
	assert.Equal(t, []int{12, 40}, others)
	assert.True(t, self)
	others, self = cgroupMembers(t.TempDir())
	assert.Empty(t, others)
	assert.False(t, self)
}

// delegatedV2 returns the cgroup v2 directory delegated to this process's
// user (SKILLGATE_DELEGATED_CGROUP, with memory or pids: the cgroup v2
// stage makes one; else the test skips) with its controllers enabled for
// its children, and the cgroup this process must go back to before a
// cgroup the test makes below it can be removed.
func delegatedV2(t *testing.T) (dir, origin string) {
	t.Helper()
	dir = os.Getenv("SKILLGATE_DELEGATED_CGROUP")
	if dir == "" {
		t.Skip("SKILLGATE_DELEGATED_CGROUP names no delegated cgroup v2 directory")
	}
	avail, err := listedControllers(dir, "cgroup.controllers")
	require.NoError(t, err)
	if len(requiredIn(avail)) == 0 {
		t.Skip("the delegated cgroup has neither memory nor pids: nothing to enable, so nothing stands in the way")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	own, ok := detectV2(string(self), string(mountinfo))
	require.True(t, ok, "no cgroup v2 here")
	origin = own.dir
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	if _, err := enableControllers(ctl, avail); err != nil {
		// dir holds this process: move it into the leaf first, as the
		// gateway would.
		_, _, err = enterLeaf(dir, ctl, avail)
		require.NoError(t, err)
		origin = filepath.Join(dir, gatewayLeaf)
	}
	return dir, origin
}

// ownCgroup makes a cgroup for the test below parent and removes it at
// the end, once this process is back in origin (removeCgroup kills what
// is left in it).
func ownCgroup(t *testing.T, parent, name, origin string) string {
	t.Helper()
	dir := filepath.Join(parent, name+"-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		if err := writeFile(filepath.Join(origin, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			t.Errorf("leave %s: %v", dir, err)
			return
		}
		_ = os.Remove(filepath.Join(dir, gatewayLeaf))
		assert.NoError(t, removeCgroup(dir))
	})
	return dir
}

// sleeperIn starts a process that stays in dir until the test kills it.
func sleeperIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	require.NoError(t, writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(sleeper.Process.Pid)))
	return sleeper
}

// inGatewayLeaf says whether this process now sits in dir's gateway leaf.
func inGatewayLeaf(t *testing.T, dir string) bool {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	return strings.HasSuffix(strings.TrimSpace(string(self)), "/"+filepath.Base(dir)+"/"+gatewayLeaf)
}

// TestGivenCgroupNeverLeaves uses a real delegated cgroup v2 directory:
// while another process sits in the directory the operator named, the
// gateway names that process instead of climbing to the parent, and once
// only the gateway is left it moves itself into a leaf of the directory.
func TestGivenCgroupNeverLeaves(t *testing.T) {
	dir, origin := delegatedV2(t)
	given := ownCgroup(t, dir, "given", origin)
	avail, err := listedControllers(given, "cgroup.controllers")
	require.NoError(t, err)
	sleeper := sleeperIn(t, given)
	require.NoError(t, writeFile(filepath.Join(given, "cgroup.procs"), strconv.Itoa(os.Getpid())))

	_, _, err = v2Given(given)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("holds other processes: pid %d (sleep);", sleeper.Process.Pid))
	assert.NoFileExists(t, filepath.Join(given, gatewayLeaf, "cgroup.procs"), "the gateway stays put when it cannot succeed")

	require.NoError(t, sleeper.Process.Kill())
	_ = sleeper.Wait()
	base, enabled, err := v2Given(given)
	require.NoError(t, err)
	assert.Equal(t, given, base, "the runs' cgroups go below the given directory")
	assert.Equal(t, avail, enabled)
	assert.True(t, inGatewayLeaf(t, given), "the gateway moved into a leaf of the given directory")
	got, err := listedControllers(given, "cgroup.subtree_control")
	require.NoError(t, err)
	assert.Equal(t, avail, got, "enabled in the kernel, not only reported")
}

// TestOwnCgroupBusyV2 uses a real delegated cgroup v2 directory for the
// gateway's own cgroup (no directory named): while another process
// shares it, the runs' cgroups go in its parent, which enables the
// controllers for its children already; alone, the gateway moves into a
// leaf of its cgroup and enables them there; started again from that
// leaf, it uses the cgroup above it.
func TestOwnCgroupBusyV2(t *testing.T) {
	dir, origin := delegatedV2(t)
	parent := ownCgroup(t, dir, "parent", origin)
	avail, err := listedControllers(parent, "cgroup.controllers")
	require.NoError(t, err)
	_, err = enableControllers(filepath.Join(parent, "cgroup.subtree_control"), avail)
	require.NoError(t, err)
	own := ownCgroup(t, parent, "own", origin)
	sleeper := sleeperIn(t, own)
	require.NoError(t, writeFile(filepath.Join(own, "cgroup.procs"), strconv.Itoa(os.Getpid())))

	base, enabled, err := v2Base(own)
	require.NoError(t, err)
	assert.Equal(t, parent, base, "the cgroup is shared: its parent takes the runs")
	assert.Equal(t, avail, enabled)
	assert.False(t, inGatewayLeaf(t, own), "a shared cgroup is left as it is")

	require.NoError(t, sleeper.Process.Kill())
	_ = sleeper.Wait()
	base, enabled, err = v2Base(own)
	require.NoError(t, err)
	assert.Equal(t, own, base, "alone in its cgroup, the gateway keeps it")
	assert.Equal(t, avail, enabled)
	assert.True(t, inGatewayLeaf(t, own), "and moved into a leaf of it")
	got, err := listedControllers(own, "cgroup.subtree_control")
	require.NoError(t, err)
	assert.Equal(t, avail, got)

	base, enabled, err = v2Base(filepath.Join(own, gatewayLeaf))
	require.NoError(t, err)
	assert.Equal(t, own, base, "from its leaf, the cgroup above it")
	assert.Equal(t, avail, enabled)
}

func TestRunCgroupV2WithoutControllers(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.procs": ""})
	cg := &Run{v2: true, dirs: []string{dir}}
	require.NoError(t, cg.limit(Limits{Memory: 1 << 20, Pids: 9}), "no limit file is written")
	assert.NoFileExists(t, filepath.Join(dir, "memory.max"))
	assert.NoFileExists(t, filepath.Join(dir, "pids.max"))
	assert.Zero(t, cg.OOMKills())
}

func TestRunCgroupV2(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"memory.max": "", "pids.max": "", "cgroup.procs": "",
		"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"})
	cg := &Run{v2: true, dirs: []string{dir}, controllers: requiredControllers}
	require.NoError(t, cg.limit(Limits{Memory: 1 << 20, Pids: 9}))
	for file, want := range map[string]string{"memory.max": "1048576", "pids.max": "9"} {
		got, _ := os.ReadFile(filepath.Join(dir, file))
		assert.Equal(t, want, string(got), file)
	}
	assert.Equal(t, int64(1), cg.OOMKills())
	require.NoError(t, cg.Attach(12345))
	got, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	assert.Equal(t, "12345", string(got))
}
