package cgroup

import (
	"bufio"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Controllers every run needs.
var requiredControllers = []string{"memory", "pids"}

// CPU bounds a run's CPU share (cpu.max on v2, the CFS quota on
// v1) where the hierarchy has it; without it the share is unbounded, a
// gap the enforcement report names, not a reason to refuse runs.
const CPU = "cpu"

// wantedControllers are the controllers a run's cgroup gets where its
// hierarchy offers them.
var wantedControllers = append(append([]string(nil), requiredControllers...), CPU)

// Layout says where this process's own cgroups are: one directory per
// controller on cgroup v1, or the single unified directory on v2.
type Layout struct {
	v2   bool
	dirs map[string]string // controller -> own cgroup directory (v1)
	// cpuDir is the own directory in a v1 cpu hierarchy, if any.
	cpuDir string
	dir    string // own unified directory (v2)
	// given: dir is Config.CgroupDir, which the runs' cgroups never leave.
	given bool
}

// mountEntry is a cgroup filesystem from /proc/self/mountinfo.
type mountEntry struct {
	root, point, fstype string
	options             []string
}

// parseProcCgroup maps controller -> path from /proc/self/cgroup; the v2
// line ("0::/path") is under the key "".
func parseProcCgroup(text string) map[string]string {
	out := make(map[string]string)
	for line := range strings.Lines(text) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// parseCgroupMounts returns the cgroup and cgroup2 mounts of a mountinfo.
func parseCgroupMounts(text string) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			continue
		}
		fstype := fields[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		out = append(out, mountEntry{
			root: unescapeMount(fields[3]), point: unescapeMount(fields[4]),
			fstype: fstype, options: strings.Split(fields[sep+3], ","),
		})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// cgroupDir joins a mount point and a cgroup path seen from the mount's root.
func cgroupDir(m mountEntry, path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, m.root)
	if !ok || rel != "" && m.root != "/" && rel[0] != '/' {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// detectCgroups picks v1 when every required controller has a v1
// hierarchy, else v2 (controllers are checked later against
// cgroup.controllers). The error says what is missing.
func detectCgroups(procCgroup, mountinfo string) (*Layout, error) {
	own := parseProcCgroup(procCgroup)
	mounts := parseCgroupMounts(mountinfo)
	v1 := make(map[string]string)
	for _, m := range mounts {
		if m.fstype != "cgroup" {
			continue
		}
		for _, c := range requiredControllers {
			path, in := own[c]
			if !in || !slices.Contains(m.options, c) {
				continue
			}
			if dir, ok := cgroupDir(m, path); ok {
				v1[c] = dir
			}
		}
	}
	if len(v1) == len(requiredControllers) {
		return &Layout{dirs: v1, cpuDir: v1CPUDir(own, mounts)}, nil
	}
	if v2, ok := detectV2(procCgroup, mountinfo); ok {
		return v2, nil
	}
	for _, c := range requiredControllers {
		if _, ok := v1[c]; !ok {
			return nil, fmt.Errorf("no %s cgroup controller: neither a cgroup v1 %s hierarchy nor a cgroup v2 mount for this process", c, c)
		}
	}
	return nil, fmt.Errorf("no usable cgroup hierarchy")
}

// v1CPUDir finds this process's own directory in a v1 hierarchy with the
// cpu controller (often mounted together with cpuacct).
func v1CPUDir(own map[string]string, mounts []mountEntry) string {
	path, in := own[CPU]
	if !in {
		return ""
	}
	for _, m := range mounts {
		if m.fstype != "cgroup" || !slices.Contains(m.options, CPU) {
			continue
		}
		if dir, ok := cgroupDir(m, path); ok {
			return dir
		}
	}
	return ""
}

// cpuPeriod is the CFS period a run's CPU quota is a share of, in
// microseconds (the kernel's default): a run at 0.5 CPUs runs at most
// 50 ms of every 100 ms, across all of its threads.
const cpuPeriod = 100_000

// cpuQuota converts a number of CPUs into a quota per cpuPeriod; 0 means
// no limit. The kernel refuses a quota under 1 ms.
func cpuQuota(cpus float64) int64 {
	if cpus <= 0 {
		return 0
	}
	return max(int64(cpus*cpuPeriod+0.5), 1000)
}

// detectV2 finds this process's own cgroup v2 directory.
func detectV2(procCgroup, mountinfo string) (*Layout, bool) {
	path, hasV2 := parseProcCgroup(procCgroup)[""]
	if !hasV2 {
		return nil, false
	}
	for _, m := range parseCgroupMounts(mountinfo) {
		if m.fstype != "cgroup2" {
			continue
		}
		if dir, ok := cgroupDir(m, path); ok {
			return &Layout{v2: true, dir: dir}, true
		}
	}
	return nil, false
}

// Dir is the own unified directory (cgroup v2).
func (l *Layout) Dir() string { return l.dir }
