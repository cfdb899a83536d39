package cgroup

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

// Prefix names the per-Runner parent cgroup (and work directory):
// skillgate-<pid>-<random>; a dead pid marks it stale.
const Prefix = "skillgate-"

// Limits are written into every run's cgroup.
type Limits struct {
	Memory int64
	Pids   int
	CPUs   float64 // 0: no CPU share limit
}

// Tree is the Runner's parent cgroup (one per v1 controller).
type Tree struct {
	layout *Layout
	roots  []string // runner directories, one per hierarchy
	limits Limits
	// controllers are those of wantedControllers the runs' cgroups
	// have; rlimits stand in for missing memory or pids (cgroup v2 only:
	// a delegated cgroup whose host binds them to cgroup v1).
	controllers []string
}

// Run is one sandbox's cgroup.
type Run struct {
	v2          bool
	dirs        []string // memory first
	controllers []string
	cpuDir      string // where the CPU quota goes; "" without the cpu controller
}

// Layouts lists where the Runner may create its cgroups, best first: dir
// alone when given (Config.CgroupDir, delegated), else what
// /proc/self/cgroup says, and for rootless mode on a host that mixes
// cgroup v1 and v2 also the v2 cgroup (the v1 ones are seldom delegated).
func Layouts(dir string, rootless bool) ([]*Layout, error) {
	if dir != "" {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return nil, fmt.Errorf("cgroup dir: %w", err)
		}
		if st.Type != unix.CGROUP2_SUPER_MAGIC {
			return nil, fmt.Errorf("cgroup dir %s is not on a cgroup v2 file system", dir)
		}
		return []*Layout{{v2: true, dir: dir, given: true}}, nil
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
	out := []*Layout{layout}
	if v2, ok := detectV2(string(self), string(mi)); ok && !layout.v2 && rootless {
		out = append(out, v2)
	}
	return out, nil
}

// NewTree creates the Runner's parent cgroups (and on v2 enables the
// controllers for them).
func NewTree(layout *Layout, name string, limits Limits) (*Tree, error) {
	t := &Tree{layout: layout, limits: limits}
	if layout.v2 {
		pick := v2Base
		if layout.given {
			pick = v2Given
		}
		base, avail, err := pick(layout.dir)
		if err != nil {
			return nil, err
		}
		root := filepath.Join(base, name)
		if err := os.Mkdir(root, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", root, err)
		}
		t.roots = []string{root}
		t.controllers, err = enableControllers(filepath.Join(root, "cgroup.subtree_control"), avail)
		return t, err
	}
	t.controllers = slices.Clone(requiredControllers)
	for _, d := range []string{layout.dirs["memory"], layout.dirs["pids"]} {
		root := filepath.Join(d, name)
		if err := os.Mkdir(root, 0o755); err != nil {
			_ = t.Close()
			return nil, fmt.Errorf("create cgroup %s: %w", root, err)
		}
		t.roots = append(t.roots, root)
	}
	// The cpu hierarchy is optional: where it is not writable, runs have
	// no CPU share limit (the report says so) rather than no cgroup.
	if layout.cpuDir != "" && os.Mkdir(filepath.Join(layout.cpuDir, name), 0o755) == nil {
		t.controllers = append(t.controllers, CPU)
		t.roots = append(t.roots, filepath.Join(layout.cpuDir, name))
	}
	return t, nil
}

// enableControllers enables avail for the children of the cgroup whose
// subtree_control file is ctl, and returns those enabled: memory and pids
// must be (an error otherwise, EBUSY while the cgroup holds processes);
// cpu is left out when the kernel refuses it (a realtime thread in the
// subtree does that), and runs then have no CPU share limit.
func enableControllers(ctl string, avail []string) ([]string, error) {
	var required []string
	for _, c := range avail {
		if c != CPU {
			required = append(required, c)
		}
	}
	if len(required) > 0 {
		if err := writeFile(ctl, enableLine(required)); err != nil {
			return nil, err
		}
	}
	if len(required) < len(avail) && writeFile(ctl, enableLine([]string{CPU})) == nil {
		return avail, nil
	}
	return required, nil
}

// has reports whether runs' cgroups have controller c.
func (t *Tree) Has(c string) bool { return t != nil && slices.Contains(t.controllers, c) }

// missing names the required controllers the runs' cgroups lack.
func (t *Tree) Missing() []string {
	var out []string
	for _, c := range requiredControllers {
		if !t.Has(c) {
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
	if filepath.Base(own) == gatewayLeaf {
		// This process moved into its leaf before (an earlier Runner):
		// the directory above is the one it set up.
		own = filepath.Dir(own)
	}
	avail, err := listedControllers(own, "cgroup.controllers")
	if err != nil || len(avail) == 0 {
		return own, nil, err
	}
	ctl := filepath.Join(own, "cgroup.subtree_control")
	enabled, err := enableControllers(ctl, avail)
	if !errors.Is(err, syscall.EBUSY) {
		return own, enabled, err
	}
	if others, self := cgroupMembers(own); len(others) == 0 && self {
		return enterLeaf(own, ctl, avail)
	}
	parent := filepath.Dir(own)
	enabled, err = listedControllers(parent, "cgroup.subtree_control")
	if err == nil && len(requiredIn(enabled)) < len(requiredIn(avail)) {
		err = fmt.Errorf("enables only %q for its children", strings.Join(enabled, " "))
	}
	if err != nil {
		return "", nil, fmt.Errorf("cgroup v2 %s holds other processes and its parent %w; run the gateway in a cgroup of its own (systemd Delegate=yes)", own, err)
	}
	return parent, enabled, nil
}

// requiredIn returns those of cs that are requiredControllers.
func requiredIn(cs []string) []string {
	var out []string
	for _, c := range cs {
		if slices.Contains(requiredControllers, c) {
			out = append(out, c)
		}
	}
	return out
}

// v2Given is v2Base for a directory the operator named
// (Config.CgroupDir): the runs' cgroups go below it and nowhere else. Its
// parent is not the gateway's to use (a delegated directory's parent
// typically belongs to root), so when the directory holds processes the
// gateway moves itself into a leaf of it, and when others remain it names
// them instead of climbing out.
func v2Given(dir string) (string, []string, error) {
	avail, err := listedControllers(dir, "cgroup.controllers")
	if err != nil || len(avail) == 0 {
		return dir, nil, err
	}
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	enabled, err := enableControllers(ctl, avail)
	if !errors.Is(err, syscall.EBUSY) {
		return dir, enabled, err
	}
	others, self := cgroupMembers(dir)
	if len(others) > 0 {
		return "", nil, fmt.Errorf("cgroup v2 %s cannot enable %s for the runs' cgroups while it holds other processes: %s; "+
			"move them into a cgroup below it (or start the gateway from an empty one)",
			dir, strings.Join(avail, " and "), describeProcs(others))
	}
	if !self {
		// Emptied since the first try: enabling may work now.
		enabled, err = enableControllers(ctl, avail)
		return dir, enabled, err
	}
	return enterLeaf(dir, ctl, avail)
}

// gatewayLeaf is the cgroup the gateway moves itself into when it sits in
// the directory where its runs' cgroups go: cgroup v2 lets only a cgroup
// without processes enable controllers for its children.
const gatewayLeaf = Prefix + "gateway"

// enterLeaf moves this process (every thread: cgroup.procs moves the
// whole thread group) into dir's gateway leaf, then enables avail in dir;
// it returns dir and the controllers enabled.
func enterLeaf(dir, ctl string, avail []string) (string, []string, error) {
	leaf := filepath.Join(dir, gatewayLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, fmt.Errorf("create cgroup %s: %w", leaf, err)
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		return "", nil, fmt.Errorf("move the gateway into %s: %w", leaf, err)
	}
	enabled, err := enableControllers(ctl, avail)
	return dir, enabled, err
}

// cgroupMembers reads dir's processes: the pids other than this process,
// and whether this process is one of them.
func cgroupMembers(dir string) (others []int, self bool) {
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		switch {
		case err != nil:
		case pid == os.Getpid():
			self = true
		default:
			others = append(others, pid)
		}
	}
	return others, self
}

// describeProcs names processes for an error: "pid 12 (bash), pid 40
// (sleep)", at most a few of them.
func describeProcs(pids []int) string {
	const shown = 5
	var parts []string
	for _, pid := range pids[:min(len(pids), shown)] {
		comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		name := strings.TrimSpace(string(comm))
		if err != nil || name == "" {
			name = "?"
		}
		parts = append(parts, fmt.Sprintf("pid %d (%s)", pid, name))
	}
	if len(pids) > shown {
		parts = append(parts, fmt.Sprintf("and %d more", len(pids)-shown))
	}
	return strings.Join(parts, ", ")
}

// listedControllers returns those of wantedControllers that dir's
// controller list file names.
func listedControllers(dir, file string) ([]string, error) {
	have, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	var out []string
	for _, c := range wantedControllers {
		if slices.Contains(strings.Fields(string(have)), c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// create makes and limits one sandbox's cgroup. A nil tree (rlimits
// instead of cgroups) makes a nil Run, whose methods do nothing.
func (t *Tree) Create(name string) (*Run, error) {
	if t == nil {
		return nil, nil
	}
	cg := &Run{v2: t.layout.v2, controllers: t.controllers}
	for _, root := range t.roots {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = cg.Destroy()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
	}
	if t.Has(CPU) {
		cg.cpuDir = cg.dirs[len(cg.dirs)-1] // v2: the one directory; v1: the cpu hierarchy's, last
	}
	if err := cg.limit(t.limits); err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	return cg, nil
}

func (cg *Run) limit(l Limits) error {
	mem, pids := strconv.FormatInt(l.Memory, 10), strconv.Itoa(l.Pids)
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
		errs = append(errs, cg.SetCPUs(l.CPUs))
		return errors.Join(errs...)
	}
	memDir, pidsDir := cg.dirs[0], cg.dirs[1]
	if err := writeFile(filepath.Join(memDir, "memory.limit_in_bytes"), mem); err != nil {
		return err
	}
	_ = writeFile(filepath.Join(memDir, "memory.memsw.limit_in_bytes"), mem) // absent without swap accounting
	if err := writeFile(filepath.Join(pidsDir, "pids.max"), pids); err != nil {
		return err
	}
	return cg.SetCPUs(l.CPUs)
}

// setCPUs bounds the run's CPU share to cpus CPUs (0: no bound). The
// quota may change while the run goes on: a job's own limit replaces the
// default its pre-started cgroup got. Without the cpu controller it does
// nothing (the enforcement report names that gap).
func (cg *Run) SetCPUs(cpus float64) error {
	if cg == nil || cg.cpuDir == "" {
		return nil
	}
	quota := cpuQuota(cpus)
	if cg.v2 {
		value := "max " + strconv.Itoa(cpuPeriod)
		if quota > 0 {
			value = strconv.FormatInt(quota, 10) + " " + strconv.Itoa(cpuPeriod)
		}
		if err := writeFile(filepath.Join(cg.cpuDir, "cpu.max"), value); err != nil {
			return fmt.Errorf("set cpu.max: %w", err)
		}
		return nil
	}
	if quota == 0 {
		quota = -1
	}
	if err := writeFile(filepath.Join(cg.cpuDir, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)); err != nil {
		return fmt.Errorf("set cpu.cfs_period_us: %w", err)
	}
	if err := writeFile(filepath.Join(cg.cpuDir, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)); err != nil {
		return fmt.Errorf("set cpu.cfs_quota_us: %w", err)
	}
	return nil
}

// cpuUsage reads the CPU time the run's processes used so far, in
// microseconds: usage_usec of cpu.stat (v2) or cpuacct.usage (v1, where
// cpuacct shares the cpu hierarchy). -1 when unknown.
func (cg *Run) CPUUsage() int64 {
	if cg == nil || cg.cpuDir == "" {
		return -1
	}
	if cg.v2 {
		data, err := os.ReadFile(filepath.Join(cg.cpuDir, "cpu.stat"))
		if err != nil {
			return -1
		}
		return parseKeyed(string(data), "usage_usec")
	}
	data, err := os.ReadFile(filepath.Join(cg.cpuDir, "cpuacct.usage"))
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return -1
	}
	return n / 1000
}

// attach moves pid into the cgroup (every hierarchy).
func (cg *Run) Attach(pid int) error {
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
func (cg *Run) OOMKills() int64 {
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
func (cg *Run) Destroy() error {
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
func (t *Tree) Close() error {
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
func (t *Tree) SweepStale() {
	for _, root := range t.roots {
		base := filepath.Dir(root)
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if !e.IsDir() || !StaleName(e.Name()) {
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

// StaleName reports whether name is skillgate-<pid>-<x> of a dead pid.
func StaleName(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
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

// V2 reports whether the tree is on cgroup v2.
func (t *Tree) V2() bool { return t.layout.v2 }

// Root is the Runner's parent cgroup directory (the memory hierarchy's on
// cgroup v1).
func (t *Tree) Root() string { return t.roots[0] }

// Roots are the Runner's parent cgroup directories, one per hierarchy.
func (t *Tree) Roots() []string { return t.roots }

// Controllers are those the runs' cgroups have.
func (t *Tree) Controllers() []string { return t.controllers }

// NewTreeForTest is a Tree that was never created on disk, for the
// enforcement report's tests.
func NewTreeForTest(v2 bool, root string, controllers []string) *Tree {
	return &Tree{layout: &Layout{v2: v2}, roots: []string{root}, controllers: controllers}
}

// Dir is the run's cgroup directory (the memory hierarchy's on cgroup v1).
func (cg *Run) Dir() string { return cg.dirs[0] }

// CPUDir is where the run's CPU share is set and read; "" without the cpu
// controller.
func (cg *Run) CPUDir() string { return cg.cpuDir }

// V2 reports whether the run's cgroup is on cgroup v2.
func (cg *Run) V2() bool { return cg.v2 }

// Available returns the controllers a run's cgroup wants that the cgroup
// v2 directory dir offers its children.
func Available(dir string) ([]string, error) { return listedControllers(dir, "cgroup.controllers") }
