package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realTree makes a Runner's tree in this process's own cgroups (root on a
// host with cgroups), as the sandbox's Runner does; it skips elsewhere.
func realTree(t *testing.T, limits Limits) (*Layout, *Tree) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	layouts, err := Layouts("", false)
	if err != nil {
		t.Skipf("no usable cgroups: %v", err)
	}
	require.Len(t, layouts, 1, "not rootless: only the own layout")
	name := Prefix + strconv.Itoa(os.Getpid()) + "-test" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tree, err := NewTree(layouts[0], name, limits)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		t.Skipf("cannot create cgroups here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = tree.Close() })
	return layouts[0], tree
}

// A run's cgroup on a real hierarchy: its limits in the kernel's files,
// a process attached, and everything removed again, the process killed.
func TestRealRunCgroup(t *testing.T) {
	layout, tree := realTree(t, Limits{Memory: 64 << 20, Pids: 17, CPUs: 0.5})
	assert.Equal(t, layout.v2, tree.V2())
	assert.Empty(t, tree.Missing(), "memory and pids")
	assert.True(t, tree.Has("memory"))
	assert.True(t, tree.Has("pids"))
	assert.False(t, tree.Has("io"))
	assert.Equal(t, tree.Roots()[0], tree.Root())
	for _, root := range tree.Roots() {
		assert.DirExists(t, root)
	}
	if !layout.v2 {
		// v1: memory and pids, then the optional cpu hierarchy, which
		// root can always create a cgroup in.
		want := 2
		if layout.cpuDir != "" {
			want = 3
			assert.Equal(t, filepath.Join(layout.cpuDir, filepath.Base(tree.Root())), tree.Roots()[2])
		}
		assert.Len(t, tree.Roots(), want)
		assert.Equal(t, layout.cpuDir != "", tree.Has(CPU), "the cpu hierarchy's cgroup")
	}

	cg, err := tree.Create("run-1")
	require.NoError(t, err)
	assert.Equal(t, tree.V2(), cg.V2())
	assert.Equal(t, filepath.Join(tree.Root(), "run-1"), cg.Dir())
	read := func(dir, file string) string {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err, file)
		return strings.TrimSpace(string(b))
	}
	if cg.V2() {
		assert.Equal(t, strconv.Itoa(64<<20), read(cg.Dir(), "memory.max"))
	} else {
		assert.Equal(t, strconv.Itoa(64<<20), read(cg.Dir(), "memory.limit_in_bytes"))
	}
	pidsDir := cg.Dir()
	if !cg.V2() {
		pidsDir = filepath.Join(tree.Roots()[1], "run-1")
	}
	assert.Equal(t, "17", read(pidsDir, "pids.max"))
	if tree.Has(CPU) {
		require.NotEmpty(t, cg.CPUDir())
		if cg.V2() {
			assert.Equal(t, "50000 100000", read(cg.CPUDir(), "cpu.max"))
		} else {
			assert.Equal(t, "50000", read(cg.CPUDir(), "cpu.cfs_quota_us"))
		}
		if _, err := os.Stat(filepath.Join(cg.CPUDir(), "cpuacct.usage")); cg.V2() || err == nil {
			assert.GreaterOrEqual(t, cg.CPUUsage(), int64(0), "cpuacct shares the cpu hierarchy")
		} else {
			assert.Equal(t, int64(-1), cg.CPUUsage(), "cpuacct in a hierarchy of its own")
		}
	} else {
		assert.Empty(t, cg.CPUDir())
		assert.Equal(t, int64(-1), cg.CPUUsage())
	}
	assert.Zero(t, cg.OOMKills())

	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	require.NoError(t, cg.Attach(sleeper.Process.Pid))
	assert.Equal(t, strconv.Itoa(sleeper.Process.Pid), read(cg.Dir(), "cgroup.procs"))
	assert.Equal(t, strconv.Itoa(sleeper.Process.Pid), read(pidsDir, "cgroup.procs"))

	// Destroy kills what is left and removes every hierarchy's directory.
	require.NoError(t, cg.Destroy())
	_ = sleeper.Wait()
	assert.NotNil(t, sleeper.ProcessState, "the process is killed")
	assert.NoDirExists(t, cg.Dir())
	assert.NoDirExists(t, pidsDir)
	require.NoError(t, cg.Destroy(), "a second Destroy finds nothing to remove")

	_, err = tree.Create("run-1")
	require.NoError(t, err, "the name is free again")
	_, err = tree.Create("run-1")
	require.ErrorContains(t, err, "create cgroup")

	// A tree with a run left in it is removed with it.
	roots := tree.Roots()
	require.NoError(t, os.Remove(filepath.Join(roots[0], "run-1")))
	for _, root := range roots[1:] {
		require.NoError(t, os.Remove(filepath.Join(root, "run-1")))
	}
	require.NoError(t, tree.Close())
	for _, root := range roots {
		assert.NoDirExists(t, root)
	}
}

// A Runner sweeps the trees of Runners of dead processes next to its own,
// with their runs, and leaves live ones and other directories alone.
func TestRealSweepStale(t *testing.T) {
	_, tree := realTree(t, Limits{Memory: 64 << 20, Pids: 17})
	base := filepath.Dir(tree.Root())
	stale := filepath.Join(base, Prefix+"2147483646-x")
	live := filepath.Join(base, Prefix+"1-x") // pid 1 lives
	other := filepath.Join(base, "skillgate_other-"+strconv.Itoa(os.Getpid()))
	for _, d := range []string{stale, filepath.Join(stale, "run"), live, other} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	t.Cleanup(func() {
		for _, d := range []string{filepath.Join(stale, "run"), stale, live, other} {
			_ = os.Remove(d)
		}
	})
	tree.SweepStale()
	assert.NoDirExists(t, stale)
	assert.DirExists(t, live)
	assert.DirExists(t, other)
	assert.DirExists(t, tree.Root(), "its own tree stays")
}

// Without cgroups (rlimits instead) the tree and its runs are nil, and
// every method does nothing.
func TestNilTreeAndRun(t *testing.T) {
	var tree *Tree
	cg, err := tree.Create("x")
	require.NoError(t, err)
	assert.Nil(t, cg)
	assert.False(t, tree.Has("memory"))
	assert.Equal(t, []string{"memory", "pids"}, tree.Missing())
	require.NoError(t, tree.Close())
	require.NoError(t, cg.SetCPUs(1))
	assert.Equal(t, int64(-1), cg.CPUUsage())
	require.NoError(t, cg.Attach(1))
	assert.Zero(t, cg.OOMKills())
	require.NoError(t, cg.Destroy())
}

// mountinfo's octal escapes: each digit of each escape counts, 0 to 7;
// an escape cut short by the end of the field, or with a digit that is
// not octal, is kept as it is.
func TestUnescapeMountDigits(t *testing.T) {
	for in, want := range map[string]string{
		`/a\134b`:       `/a\b`,
		`/t\011x\012`:   "/t\tx\n",
		`/q\047`:        "/q'",
		`/\177`:         "/\x7f",
		`/s\040s\040`:   "/s s ",
		`/cut\04`:       `/cut\04`,
		`/cut\0`:        `/cut\0`,
		`/cut\`:         `/cut\`,
		`/nine\048`:     `/nine\048`,
		`/eight\080`:    `/eight\080`,
		`/x\800`:        `/x\800`,
		`\041`:          "!",
		`plain`:         "plain",
		`/two\\041`:     `/two\!`,
		`/mix\101\142C`: "/mixAbC",
	} {
		assert.Equal(t, want, unescapeMount(in), in)
	}
}

// A cgroup path is found under a mount only below the mount's root: a
// sibling whose name merely starts with the root's is not.
func TestCgroupDirBelowRoot(t *testing.T) {
	mounts := "40 1 0:30 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	l, err := detectCgroups("0::/kubepods/pod1/c1\n", mounts)
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/c1", l.Dir())
	_, err = detectCgroups("0::/kubepods/pod10\n", mounts)
	assert.Error(t, err, "pod10 is not below pod1")
	_, err = detectCgroups("0::/kubepods\n", mounts)
	assert.Error(t, err, "above the mount's root")
	l, err = detectCgroups("0::/a\n", "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/a", l.Dir(), "below a root of /")
}

// A process is named by its comm; at most five are named, and "and N
// more" only when there are more than five.
func TestDescribeProcsNamesAndCount(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	self := os.Getpid()
	assert.Equal(t, "pid "+strconv.Itoa(self)+" ("+strings.TrimSpace(string(comm))+")", describeProcs([]int{self}))
	const dead = 2147483646
	five := describeProcs([]int{dead, dead, dead, dead, dead})
	assert.Equal(t, strings.Repeat("pid 2147483646 (?), ", 4)+"pid 2147483646 (?)", five)
	six := describeProcs([]int{dead, dead, dead, dead, dead, dead})
	assert.Equal(t, five+", and 1 more", six)
}

// A given directory must be on a cgroup v2 file system; it is then the
// only layout, whatever else the process sits in.
func TestLayoutsOfAGivenDir(t *testing.T) {
	_, err := Layouts(filepath.Join(t.TempDir(), "absent"), false)
	assert.ErrorContains(t, err, "cgroup dir: ")
	dir := t.TempDir()
	_, err = Layouts(dir, true)
	assert.EqualError(t, err, "cgroup dir "+dir+" is not on a cgroup v2 file system")

	self, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var v2 string
	for _, m := range parseCgroupMounts(string(self)) {
		if m.fstype == "cgroup2" {
			v2 = m.point
			break
		}
	}
	if v2 == "" {
		t.Skip("no cgroup v2 mount here")
	}
	layouts, err := Layouts(v2, false)
	require.NoError(t, err)
	require.Len(t, layouts, 1)
	assert.True(t, layouts[0].v2)
	assert.Equal(t, v2, layouts[0].Dir())
}

// Without a given directory the layouts are this process's own cgroups,
// as /proc/self says; rootless on a host that mixes v1 and v2 adds the v2
// cgroup (v1 ones are seldom delegated).
func TestLayoutsOfThisProcess(t *testing.T) {
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	want, err := detectCgroups(string(self), string(mountinfo))
	if err != nil {
		t.Skipf("no usable cgroups here: %v", err)
	}
	layouts, err := Layouts("", false)
	require.NoError(t, err)
	assert.Equal(t, []*Layout{want}, layouts)

	layouts, err = Layouts("", true)
	require.NoError(t, err)
	v2, hasV2 := detectV2(string(self), string(mountinfo))
	if want.v2 || !hasV2 {
		assert.Equal(t, []*Layout{want}, layouts, "nothing else to try")
		return
	}
	assert.Equal(t, []*Layout{want, v2}, layouts, "the v1 layout first, then the v2 one")
}

// cpuacct.usage (ns) reads as µs; what is not a number is unknown.
func TestCPUUsageV1(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cpuacct.usage": "1999\n"})
	cg := &Run{dirs: []string{dir, dir}, cpuDir: dir}
	assert.Equal(t, int64(1), cg.CPUUsage())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpuacct.usage"), []byte("many\n"), 0o644))
	assert.Equal(t, int64(-1), cg.CPUUsage())
}

// A cgroup that stays busy (here: it has a child) is retried with a
// doubling pause, capped at 200 ms, for about a second (1 + 2 + … + 128 ms,
// then four times 200 ms: 1.055 s), then reported; in virtual time, exactly.
func TestRealRemoveGivesUp(t *testing.T) {
	_, tree := realTree(t, Limits{Memory: 64 << 20, Pids: 17})
	cg, err := tree.Create("busy")
	require.NoError(t, err)
	child := filepath.Join(cg.Dir(), "child")
	require.NoError(t, os.Mkdir(child, 0o755))
	t.Cleanup(func() { _ = os.Remove(child); _ = cg.Destroy() })

	// In virtual time the pauses are the only time that passes: the 12
	// between the 13 tries double from 1 ms and stop at 200 ms.
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		err := cg.Destroy()
		require.ErrorContains(t, err, "remove cgroup "+cg.Dir())
		assert.Equal(t, 1055*time.Millisecond, time.Since(start), "1+2+4+…+128 ms, then 200 ms four times")
	})
	assert.DirExists(t, cg.Dir())
}

// On cgroup v2 a Runner's tree goes in the directory v2Base picks, which
// enables memory and pids for its children there; plain files stand in
// for the kernel's, so the tree's own subtree_control is missing and
// says so. A name taken already is refused.
func TestNewTreeV2OnFiles(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.controllers": "memory pids\n", "cgroup.subtree_control": ""})
	layout := &Layout{v2: true, dir: dir}
	_, err := NewTree(layout, "r", Limits{})
	require.ErrorContains(t, err, filepath.Join(dir, "r", "cgroup.subtree_control"))
	assert.DirExists(t, filepath.Join(dir, "r"))
	got, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	require.NoError(t, err)
	assert.Equal(t, "+memory +pids", string(got))

	_, err = NewTree(layout, "r", Limits{})
	require.ErrorContains(t, err, "create cgroup "+filepath.Join(dir, "r"))
}
