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

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
)

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
	avail, err := cgroup.Available(dir)
	require.NoError(t, err)
	assert.Equal(t, avail, r.cgroups.Controllers())
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
	runDir := sb.cg.Dir()
	assert.Equal(t, filepath.Join(dir, r.name, sb.id), runDir, "a cgroup per sandbox")
	procs, err := os.ReadFile(filepath.Join(runDir, "cgroup.procs"))
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(procs)), strconv.Itoa(sb.pid))
	assert.GreaterOrEqual(t, len(strings.Fields(string(procs))), 2, "pid 1 and Python")
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "cgroup.kill"), []byte("1"), 0))
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
		out := output(t, run(t, r, countForksAndThreads, nil, withTimeout(60*time.Second)))
		assert.Less(t, out["processes"], float64(r.cfg.Pids), "pids.max holds")
	}
}
