package cgroup

import (
	"slices"
	"strings"
)

// Moving pid 1 into the run's cgroup takes the kernel's cgroup threadgroup
// lock for writing. Unless the host favours dynamic cgroup changes, that
// write waits for an RCU grace period, which lasts until every other CPU
// has passed a quiescent state: up to a scheduler tick on each CPU busy
// with other work. Moves made back to back share one; a start after a
// pause waits for a whole one (see docs/performance.md). The kernel
// boot option cgroup_favordynmods=true (Linux 6.7+, cgroup v1 and v2) or the
// cgroup2 mount option favordynmods (6.0+) turns the wait off, at the cost
// of slightly slower fork and exit.

// favorsDynmods reports whether the host favours dynamic cgroup changes,
// from the text of /proc/self/mountinfo and /proc/cmdline. The mount
// option shows among the super options of every cgroup mount it applies
// to; the boot option is read from the command line.
func favorsDynmods(mountinfo, cmdline string) bool {
	for _, m := range parseCgroupMounts(mountinfo) {
		if slices.Contains(m.options, "favordynmods") {
			return true
		}
	}
	for _, arg := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(arg, "cgroup_favordynmods="); ok {
			switch strings.ToLower(v) {
			case "1", "y", "yes", "on", "true":
				return true
			}
		}
	}
	return false
}

// MoveHint is the start-up advice for a Runner that moves each
// sandbox into a cgroup of its own on a host that makes such moves wait;
// empty when there is nothing to advise.
func MoveHint(usesCgroups bool, mountinfo, cmdline string) string {
	if !usesCgroups || favorsDynmods(mountinfo, cmdline) {
		return ""
	}
	return "each sandbox start moves its pid 1 into the run's cgroup, which waits for an RCU grace period on this host " +
		"(milliseconds of every cold start); the kernel boot option cgroup_favordynmods=true or the cgroup2 mount " +
		"option favordynmods removes the wait (docs/operations.md)"
}
