package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
)

// busyLoops keeps four processes busy until each has used cpu_ms of CPU
// time: more than a run capped below a CPU may take at once.
const busyLoops = `
import os, time

def spin(ms):
    end = time.process_time() + ms / 1000
    while time.process_time() < end:
        pass

def main(args):
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            spin(args["cpu_ms"])
            os._exit(0)
        pids.append(pid)
    spin(args["cpu_ms"])
    for pid in pids:
        os.waitpid(pid, 0)
    return {"done": True}
`

// TestCPUShare runs busy loops in a run capped at a share of a CPU and
// reads the run's cgroup afterwards (before its teardown): the quota is
// the one asked for, the kernel throttled the run, and the CPU time it
// got (cpu.stat's usage on cgroup v2) fits in the quota of the periods it
// ran. No wall-clock figure is asserted.
func TestCPUShare(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.CPUs = 0.5 })
	if !r.cgroups.Has(cgroup.CPU) {
		if os.Getenv("SKILLGATE_REQUIRE_CPU_CONTROLLER") == "1" {
			t.Fatalf("no cpu controller in the runs' cgroups (%v)", r.cgroups)
		}
		t.Skip("no cpu controller in the runs' cgroups here")
	}
	assert.Contains(t, r.Enforcement().CPU, "per run: at most 0.5 CPUs")
	for _, tc := range []struct {
		name  string
		job   float64
		quota int64
		// mustThrottle: four busy processes get 20 ms of every 100 ms
		// however busy the machine is; whether they reach 50 ms of it
		// depends on what else runs.
		mustThrottle bool
	}{
		{"the gateway's share", 0, 50_000, false},
		{"a skill's lower share", 0.2, 20_000, true},
		{"a skill's higher share is capped", 4, 50_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stat := runCapped(t, r, tc.job, tc.quota)
			if tc.mustThrottle {
				assert.Positive(t, stat["nr_throttled"], "busy processes over their share are throttled: %v", stat)
			}
			periods := stat["nr_periods"]
			require.Positive(t, periods, "%v", stat)
			if usage, ok := stat["usage_usec"]; ok {
				assert.Positive(t, usage)
				// Each period grants the quota (plus any burst the
				// kernel reports); the scheduler notices an exhausted
				// quota at its next tick, so a throttled period may run a
				// little over. A quarter of slack still tells a capped run
				// from one that is not: four busy processes would take
				// up to one CPU each.
				bound := periods*tc.quota*5/4 + 2*tc.quota + stat["burst_usec"]
				assert.LessOrEqual(t, usage, bound, "CPU time beyond the quota: %v", stat)
			}
		})
	}
}

// runCapped runs busyLoops with the job's CPU share in a sandbox of r and
// returns what the job added to its cgroup's cpu.stat (cpuacct.usage as
// usage_usec on v1 where it shares the hierarchy), read after the run and
// before the teardown: the sandbox's start-up ran under the gateway's
// share, before the job's own was set.
func runCapped(t *testing.T, r *Runner, cpus float64, quota int64) map[string]int64 {
	t.Helper()
	sb, err := r.spawn(false, Environment{})
	require.NoError(t, err)
	defer r.teardown(sb)
	before := cpuStat(t, sb.cg)
	p, err := newPlan(r.cfg, Job{RunID: t.Name(), Code: busyLoops, Args: []byte(`{"cpu_ms": 200}`),
		CPUs: cpus, Timeout: 60 * time.Second})
	require.NoError(t, err)
	res, err := sb.run(context.Background(), r.closing, p, &r.cfg)
	require.NoError(t, err)
	requireCompleted(t, res)

	dir := sb.cg.CPUDir()
	if sb.cg.V2() {
		max, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(quota, 10)+" 100000", strings.TrimSpace(string(max)))
	} else {
		q, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(quota, 10), strings.TrimSpace(string(q)))
	}
	stat := cpuStat(t, sb.cg)
	for k, v := range before {
		stat[k] -= v
	}
	return stat
}

func cpuStat(t *testing.T, cg *cgroup.Run) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cg.CPUDir(), "cpu.stat"))
	require.NoError(t, err)
	stat := map[string]int64{}
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		stat[k], _ = strconv.ParseInt(v, 10, 64)
	}
	if usage := cg.CPUUsage(); usage >= 0 {
		stat["usage_usec"] = usage
	}
	return stat
}
