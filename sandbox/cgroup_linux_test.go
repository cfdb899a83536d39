package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	assert.False(t, staleName("other"))
	assert.False(t, staleName(cgroupPrefix+"gateway"))
	assert.False(t, staleName(cgroupPrefix+"1-x"), "pid 1 is alive")
	assert.True(t, staleName(cgroupPrefix+"2147483646-x"), "no such pid")
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
	assert.Equal(t, []string{"memory", "pids"}, avail)
	got, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	assert.Equal(t, "+memory +pids", string(got))

	// A delegated cgroup on a host that keeps memory in cgroup v1.
	dir = fakeCgroupDir(t, map[string]string{"cgroup.controllers": "cpu pids\n", "cgroup.subtree_control": ""})
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

	_, _, err = v2Base(filepath.Join(dir, "absent"))
	assert.ErrorContains(t, err, "no such file")
}

func TestRunCgroupV2WithoutControllers(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"cgroup.procs": ""})
	cg := &runCgroup{v2: true, dirs: []string{dir}}
	require.NoError(t, cg.limit(cgroupLimits{memory: 1 << 20, pids: 9}), "no limit file is written")
	assert.NoFileExists(t, filepath.Join(dir, "memory.max"))
	assert.NoFileExists(t, filepath.Join(dir, "pids.max"))
	assert.Zero(t, cg.oomKills())
}

func TestRunCgroupV2(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"memory.max": "", "pids.max": "", "cgroup.procs": "",
		"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"})
	cg := &runCgroup{v2: true, dirs: []string{dir}, controllers: requiredControllers}
	require.NoError(t, cg.limit(cgroupLimits{memory: 1 << 20, pids: 9}))
	for file, want := range map[string]string{"memory.max": "1048576", "pids.max": "9"} {
		got, _ := os.ReadFile(filepath.Join(dir, file))
		assert.Equal(t, want, string(got), file)
	}
	assert.Equal(t, int64(1), cg.oomKills())
	require.NoError(t, cg.attach(12345))
	got, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	assert.Equal(t, "12345", string(got))
}

// TestDelegatedCgroupV2 uses a cgroup v2 directory delegated to this
// process's user (.ci/test-rootless creates one, as root, and chowns it:
// that is delegation): each sandbox gets a cgroup of its own there,
// cgroup.kill ends all of its processes, nothing is left behind, and what
// the directory has no controller for is limited by rlimits.
func TestDelegatedCgroupV2(t *testing.T) {
	dir := os.Getenv("SKILLGATE_DELEGATED_CGROUP")
	if dir == "" {
		t.Skip("SKILLGATE_DELEGATED_CGROUP names no delegated cgroup v2 directory")
	}
	r := ownRunner(t, func(c *Config) { c.CgroupDir = dir })
	require.NotNil(t, r.cgroups, "%v", r.cgroupErr)
	avail, err := listedControllers(dir, "cgroup.controllers")
	require.NoError(t, err)
	assert.Equal(t, avail, r.cgroups.controllers)
	e := r.Enforcement()
	assert.Equal(t, "cgroup v2: a cgroup per run under "+dir+", killed as a whole", e.Cgroup)
	for c, line := range map[string]string{"memory": e.Memory, "pids": e.Processes} {
		if slices.Contains(avail, c) {
			assert.Contains(t, line, "cgroup v2", c)
		} else {
			assert.Contains(t, line, enforcedRlimit, c)
		}
	}

	sb, err := r.spawn(false, Environment{})
	require.NoError(t, err)
	runDir := sb.cg.dirs[0]
	assert.Equal(t, filepath.Join(dir, r.name, sb.id), runDir, "a cgroup per sandbox")
	procs, err := os.ReadFile(filepath.Join(runDir, "cgroup.procs"))
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(procs)), strconv.Itoa(sb.pid))
	assert.GreaterOrEqual(t, len(strings.Fields(string(procs))), 2, "pid 1 and Python")
	require.NoError(t, writeFile(filepath.Join(runDir, "cgroup.kill"), "1"))
	select {
	case <-sb.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("cgroup.kill left pid 1 running")
	}
	r.teardown(sb)
	assert.NoDirExists(t, runDir)

	// A daemon the run leaves behind goes with its cgroup.
	res := run(t, r, daemon, nil, withTimeout(5*time.Second))
	requireCompleted(t, res)
	assertHealthyAndClean(t, r)
	if slices.Contains(avail, "pids") {
		out := output(t, run(t, r, countForksAndThreads, nil))
		assert.Less(t, out["processes"], float64(r.cfg.Pids), "pids.max holds")
	}
}
