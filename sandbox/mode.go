package sandbox

import (
	"fmt"
	"strings"
)

// Mode says where the sandbox's privileges come from.
type Mode string

// Modes. Root and rootless build the same sandbox; they differ in how run
// uids are mapped and in what enforces the memory and process limits (see
// Enforcement).
const (
	// ModeAuto picks ModeRoot when the gateway runs as root, else
	// ModeRootless.
	ModeAuto Mode = "auto"
	// ModeRoot maps a range of 65536 host ids (Config.UIDBase) and limits
	// every run with a cgroup of its own.
	ModeRoot Mode = "root"
	// ModeRootless builds the sandbox from an unprivileged user namespace:
	// the run's uid maps to a subordinate uid of the gateway's user or to
	// its own (IDMap), and limits come from a delegated cgroup when one is
	// writable, else (and for a controller it lacks) from rlimits.
	ModeRootless Mode = "rootless"
)

// ParseMode parses "auto", "root" or "rootless"; "" means auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeRoot, ModeRootless:
		return m, nil
	}
	return "", fmt.Errorf("%w: sandbox mode %q is not auto, root or rootless", errInvalidConfig, s)
}

// Limit mechanisms named in Enforcement.
const (
	enforcedCgroupV1 = "cgroup v1"
	enforcedCgroupV2 = "cgroup v2"
	enforcedRlimit   = "rlimit"
)

// Enforcement says which mechanism enforces each property of a Runner's
// sandboxes, as set up and verified by its start-up self-check. Every
// value is a short phrase meant for logs and /readyz.
type Enforcement struct {
	// Mode is ModeRoot or ModeRootless, never ModeAuto.
	Mode Mode
	// UIDs says which host uid the sandboxed code runs as.
	UIDs string
	// Cgroup says where runs' cgroups are, if anywhere.
	Cgroup string
	// Memory, Processes and CPU name the mechanism bounding each.
	Memory    string
	Processes string
	CPU       string
	// UserCounts names the limits on what the kernel counts per user
	// (inotify, pending signals, namespaces...) in each run's own user
	// namespace.
	UserCounts string
	// Filesystem, Network and Syscalls name the isolation layers.
	Filesystem string
	Network    string
	Syscalls   string
	// Gaps lists what this mode enforces less strictly than a root
	// gateway with cgroups does; empty when nothing.
	Gaps []string
}

// Pairs returns the report as ordered key/value pairs.
func (e Enforcement) Pairs() [][2]string {
	out := [][2]string{
		{"mode", string(e.Mode)}, {"uids", e.UIDs}, {"cgroup", e.Cgroup}, {"memory", e.Memory},
		{"processes", e.Processes}, {"cpu", e.CPU}, {"user_counts", e.UserCounts}, {"filesystem", e.Filesystem},
		{"network", e.Network}, {"syscalls", e.Syscalls},
	}
	for _, g := range e.Gaps {
		out = append(out, [2]string{"gap", g})
	}
	return out
}

// String renders the report one "key: value" per line.
func (e Enforcement) String() string {
	var b strings.Builder
	for _, kv := range e.Pairs() {
		fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
	}
	return b.String()
}
