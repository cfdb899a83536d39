package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// sandboxMemory is what a sandbox's processes take: the sum of their
// proportional set sizes (pages shared with the template or with other
// sandboxes count a share each), read while the sandbox waits for a job.
func sandboxMemory(pid int) (int64, error) {
	var total int64
	pids := []int{pid}
	for len(pids) > 0 {
		p := pids[0]
		pids = pids[1:]
		pss, err := readPss(p)
		if err != nil {
			return 0, err
		}
		total += pss
		pids = append(pids, childPids(p)...)
	}
	return total, nil
}

func readPss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "Pss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no Pss in /proc/%d/smaps_rollup", pid)
}

func childPids(pid int) []int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// sizePool measures the warm sandbox the self-check started and bounds
// the pool so that warm sandboxes stay within WarmMemoryBytes.
func (r *Runner) sizePool(sb *sandbox) {
	mem, err := sandboxMemory(sb.pid)
	if err != nil || mem <= 0 {
		r.log.Warn().Err(err).Msg("sandbox: cannot measure a warm sandbox's memory; the pool is not bounded by --sandbox-warm-memory")
		return
	}
	r.warmBytes.Store(mem)
	if r.cfg.WarmMemoryBytes <= 0 {
		return
	}
	fit := int(r.cfg.WarmMemoryBytes / mem)
	if fit < r.cfg.WarmPool {
		r.log.Warn().Int("warm_pool", r.cfg.WarmPool).Int("fits", fit).Int64("sandbox_bytes", mem).
			Int64("budget_bytes", r.cfg.WarmMemoryBytes).Msg("sandbox: the warm pool is cut to fit --sandbox-warm-memory")
	}
	r.poolSize.Store(int64(min(r.cfg.WarmPool, fit)))
}
