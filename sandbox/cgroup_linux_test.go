package sandbox

import (
	"os"
	"path/filepath"
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
	f.Fuzz(func(t *testing.T, self, mounts string) {
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
	base, err := v2Base(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, base)
	got, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	assert.Equal(t, "+memory +pids", string(got))

	dir = fakeCgroupDir(t, map[string]string{"cgroup.controllers": "cpu memory\n"})
	_, err = v2Base(dir)
	assert.ErrorContains(t, err, "no pids cgroup controller")
}

func TestRunCgroupV2(t *testing.T) {
	dir := fakeCgroupDir(t, map[string]string{"memory.max": "", "pids.max": "", "cgroup.procs": "",
		"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"})
	cg := &runCgroup{v2: true, dirs: []string{dir}}
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
