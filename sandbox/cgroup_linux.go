package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupPrefix names the per-Runner parent cgroup (and work directory):
// skillgate-<pid>-<random>; a dead pid marks it stale.
const cgroupPrefix = "skillgate-"

// cgroupLimits are written into every run's cgroup.
type cgroupLimits struct {
	memory int64
	pids   int
}

// cgroupTree is the Runner's parent cgroup (one per v1 controller).
type cgroupTree struct {
	layout *cgroupLayout
	roots  []string // runner directories, one per hierarchy
	limits cgroupLimits
	// controllers are those of requiredControllers the runs' cgroups
	// have; rlimits stand in for the others (cgroup v2 only: a delegated
	// cgroup whose host binds memory or pids to cgroup v1).
	controllers []string
}

// runCgroup is one sandbox's cgroup.
type runCgroup struct {
	v2          bool
	dirs        []string // memory first
	controllers []string
}

// cgroupLayouts lists where the Runner may create its cgroups, best first:
// the configured delegated directory alone, else what /proc/self/cgroup
// says, and for rootless mode on a host that mixes cgroup v1 and v2 also
// the v2 cgroup (the v1 ones are seldom delegated).
func cgroupLayouts(cfg *Config, mode Mode) ([]*cgroupLayout, error) {
	if cfg.CgroupDir != "" {
		var st unix.Statfs_t
		if err := unix.Statfs(cfg.CgroupDir, &st); err != nil {
			return nil, fmt.Errorf("cgroup dir: %w", err)
		}
		if st.Type != unix.CGROUP2_SUPER_MAGIC {
			return nil, fmt.Errorf("cgroup dir %s is not on a cgroup v2 file system", cfg.CgroupDir)
		}
		return []*cgroupLayout{{v2: true, dir: cfg.CgroupDir}}, nil
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("no cgroup support: %w", err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	layout, err := detectCgroups(string(self), string(mi))
	if err != nil {
		return nil, err
	}
	out := []*cgroupLayout{layout}
	if v2, ok := detectV2(string(self), string(mi)); ok && !layout.v2 && mode == ModeRootless {
		out = append(out, v2)
	}
	return out, nil
}

// newCgroupTree creates the Runner's parent cgroups (and on v2 enables the
// controllers for them).
func newCgroupTree(layout *cgroupLayout, name string, limits cgroupLimits) (*cgroupTree, error) {
	t := &cgroupTree{layout: layout, limits: limits}
	if layout.v2 {
		base, avail, err := v2Base(layout.dir)
		if err != nil {
			return nil, err
		}
		root := filepath.Join(base, name)
		if err := os.Mkdir(root, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", root, err)
		}
		t.roots, t.controllers = []string{root}, avail
		if len(avail) == 0 {
			return t, nil
		}
		return t, writeFile(filepath.Join(root, "cgroup.subtree_control"), enableLine(avail))
	}
	t.controllers = requiredControllers
	for _, c := range requiredControllers {
		root := filepath.Join(layout.dirs[c], name)
		if err := os.Mkdir(root, 0o755); err != nil {
			t.close()
			return nil, fmt.Errorf("create cgroup %s: %w", root, err)
		}
		t.roots = append(t.roots, root)
	}
	return t, nil
}

// has reports whether runs' cgroups have controller c.
func (t *cgroupTree) has(c string) bool { return t != nil && slices.Contains(t.controllers, c) }

// missing names the required controllers the runs' cgroups lack.
func (t *cgroupTree) missing() []string {
	var out []string
	for _, c := range requiredControllers {
		if !t.has(c) {
			out = append(out, c)
		}
	}
	return out
}

func enableLine(controllers []string) string {
	return "+" + strings.Join(controllers, " +")
}

// v2Base picks the cgroup v2 directory to create the Runner's cgroup in,
// and which of memory and pids its children get there (maybe neither: a
// delegated cgroup still places and kills each run). That is this
// process's own cgroup when its children can get them (no other process
// in it: with Delegate=yes this process moves into a leaf first, as a
// cgroup with processes cannot enable controllers for its children), else
// its parent, which already enables them for its children.
func v2Base(own string) (string, []string, error) {
	avail, err := listedControllers(own, "cgroup.controllers")
	if err != nil || len(avail) == 0 {
		return own, nil, err
	}
	ctl := filepath.Join(own, "cgroup.subtree_control")
	err = writeFile(ctl, enableLine(avail))
	if !errors.Is(err, syscall.EBUSY) {
		return own, avail, err
	}
	procs, _ := os.ReadFile(filepath.Join(own, "cgroup.procs"))
	if strings.TrimSpace(string(procs)) == strconv.Itoa(os.Getpid()) {
		leaf := filepath.Join(own, cgroupPrefix+"gateway")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", nil, err
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return "", nil, fmt.Errorf("move into %s: %w", leaf, err)
		}
		return own, avail, writeFile(ctl, enableLine(avail))
	}
	parent := filepath.Dir(own)
	enabled, err := listedControllers(parent, "cgroup.subtree_control")
	if err == nil && len(enabled) < len(avail) {
		err = fmt.Errorf("enables only %q for its children", strings.Join(enabled, " "))
	}
	if err != nil {
		return "", nil, fmt.Errorf("cgroup v2 %s holds other processes and its parent %w; run the gateway in a cgroup of its own (systemd Delegate=yes)", own, err)
	}
	return parent, avail, nil
}

// listedControllers returns those of requiredControllers that dir's
// controller list file names.
func listedControllers(dir, file string) ([]string, error) {
	have, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	var out []string
	for _, c := range requiredControllers {
		if slices.Contains(strings.Fields(string(have)), c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// create makes and limits one sandbox's cgroup. A nil tree (rlimits
// instead of cgroups) makes a nil runCgroup, whose methods do nothing.
func (t *cgroupTree) create(name string) (*runCgroup, error) {
	if t == nil {
		return nil, nil
	}
	cg := &runCgroup{v2: t.layout.v2, controllers: t.controllers}
	for _, root := range t.roots {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.destroy()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
	}
	if err := cg.limit(t.limits); err != nil {
		cg.destroy()
		return nil, err
	}
	return cg, nil
}

func (cg *runCgroup) limit(l cgroupLimits) error {
	mem, pids := strconv.FormatInt(l.memory, 10), strconv.Itoa(l.pids)
	if cg.v2 {
		d := cg.dirs[0]
		var errs []error
		if slices.Contains(cg.controllers, "memory") {
			_ = writeFile(filepath.Join(d, "memory.swap.max"), "0") // absent without swap accounting
			errs = append(errs, writeFile(filepath.Join(d, "memory.max"), mem))
		}
		if slices.Contains(cg.controllers, "pids") {
			errs = append(errs, writeFile(filepath.Join(d, "pids.max"), pids))
		}
		return errors.Join(errs...)
	}
	memDir, pidsDir := cg.dirs[0], cg.dirs[1]
	if err := writeFile(filepath.Join(memDir, "memory.limit_in_bytes"), mem); err != nil {
		return err
	}
	_ = writeFile(filepath.Join(memDir, "memory.memsw.limit_in_bytes"), mem) // absent without swap accounting
	return writeFile(filepath.Join(pidsDir, "pids.max"), pids)
}

// attach moves pid into the cgroup (every hierarchy).
func (cg *runCgroup) attach(pid int) error {
	if cg == nil {
		return nil
	}
	for _, d := range cg.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("attach to cgroup %s: %w", d, err)
		}
	}
	return nil
}

// oomKills reads the memory controller's OOM-kill counter.
func (cg *runCgroup) oomKills() int64 {
	if cg == nil {
		return 0
	}
	file := "memory.oom_control"
	if cg.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(cg.dirs[0], file))
	if err != nil {
		return 0
	}
	return parseKeyed(string(data), "oom_kill")
}

// parseKeyed reads "key value" from a flat-keyed cgroup file.
func parseKeyed(text, key string) int64 {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// destroy kills whatever is left (belt and braces: the pid namespace is
// gone already) and removes the directories, retrying while the kernel
// still finishes exiting tasks.
func (cg *runCgroup) destroy() error {
	if cg == nil {
		return nil
	}
	var errs []error
	for _, d := range cg.dirs {
		errs = append(errs, removeCgroup(d))
	}
	return errors.Join(errs...)
}

func removeCgroup(dir string) error {
	delay := time.Millisecond
	for attempt := 0; ; attempt++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if attempt == 12 {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		// A run's cgroup is usually empty by the first try (its pid 1 is
		// reaped, so its pid namespace is gone): only what keeps it busy
		// is killed, and given time to die.
		killCgroup(dir)
		time.Sleep(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func killCgroup(dir string) {
	if writeFile(filepath.Join(dir, "cgroup.kill"), "1") == nil {
		return
	}
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// close removes the Runner's parent cgroups (their children are gone).
func (t *cgroupTree) close() error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, root := range t.roots {
		errs = append(errs, removeCgroup(root))
	}
	return errors.Join(errs...)
}

// sweepStale removes parent cgroups left by Runners of dead processes,
// next to this Runner's own.
func (t *cgroupTree) sweepStale() {
	for _, root := range t.roots {
		base := filepath.Dir(root)
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if !e.IsDir() || !staleName(e.Name()) {
				continue
			}
			dir := filepath.Join(base, e.Name())
			children, _ := os.ReadDir(dir)
			for _, c := range children {
				if c.IsDir() {
					_ = removeCgroup(filepath.Join(dir, c.Name()))
				}
			}
			_ = removeCgroup(dir)
		}
	}
}

// staleName reports whether name is skillgate-<pid>-<x> of a dead pid.
func staleName(name string) bool {
	rest, ok := strings.CutPrefix(name, cgroupPrefix)
	if !ok {
		return false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
