package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
	"github.com/skillgate/skillgate/sandbox/internal/pid1"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// resolveMode turns ModeAuto into root or rootless and refuses a mode the
// process cannot honour.
func resolveMode(m Mode, euid int) (Mode, error) {
	switch {
	case m == "" || m == ModeAuto:
		if euid == 0 {
			return ModeRoot, nil
		}
		return ModeRootless, nil
	case m == ModeRoot && euid != 0:
		return "", fmt.Errorf("root sandbox mode needs root to map a range of sandbox uids and create cgroups (running as uid %d); use rootless or auto", euid)
	case m == ModeRootless && euid == 0:
		// The run's uid would map to host uid 0: the one uid whose
		// files a run must never own.
		return "", errors.New("rootless sandbox mode maps the run onto the gateway's own uid, and this gateway runs as root; use root or auto, or run the gateway as an unprivileged user")
	}
	return m, nil
}

// initCaps are what a rootless pid 1 keeps across its execve (as ambient
// capabilities of its user namespace): enough to build the root, set the
// hostname, bring up loopback for a run with network, lower the limits of
// its user namespace (pid1.RunUserLimits) and drop the bounding set. Python gets
// none of them.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN, unix.CAP_SYS_RESOURCE}

// rootlessAttr clones pid 1 into a user namespace where the sandbox uid
// (1000, as in root mode) is the gateway's own uid: an unprivileged process
// may map exactly that one id, and must deny setgroups to map its gid.
func rootlessAttr() *syscall.SysProcAttr {
	uidMap := []syscall.SysProcIDMap{{ContainerID: wire.SandboxUID, HostID: os.Getuid(), Size: 1}}
	gidMap := []syscall.SysProcIDMap{{ContainerID: wire.SandboxUID, HostID: os.Getgid(), Size: 1}}
	return &syscall.SysProcAttr{
		Cloneflags:  cloneFlags,
		UidMappings: uidMap,
		GidMappings: gidMap,
		AmbientCaps: initCaps,
		Pdeathsig:   syscall.SIGKILL,
		Setsid:      true,
	}
}

const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// preflightRootless checks what a rootless sandbox needs from the host;
// the self-check then proves it by starting one.
func preflightRootless(cfg *Config) error {
	if err := checkUserNamespaces(maxUserNamespaces); err != nil {
		return err
	}
	if n, err := readInt(unprivUsernsClone); err == nil && n == 0 {
		return fmt.Errorf("unprivileged user namespaces are disabled: %s=0 (set it to 1, or run the gateway as root)", unprivUsernsClone)
	}
	if err := checkSeccompSupport(); err != nil {
		return err
	}
	if !pid1.SeccompForThisArch() {
		return errors.New("no seccomp filter for this architecture")
	}
	return checkPython(cfg.Python)
}

// Knobs that decide whether an unprivileged user may create a user
// namespace (Debian's and Ubuntu's).
const (
	unprivUsernsClone    = "/proc/sys/kernel/unprivileged_userns_clone"
	apparmorRestrictUser = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
)

// explainSpawn adds the likely cause to a rootless start that the kernel
// refused.
func explainSpawn(err error) error {
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.ENOSPC) {
		return err
	}
	hint := "unprivileged user namespaces are refused here: check user.max_user_namespaces, " +
		"kernel.unprivileged_userns_clone, the container's seccomp profile (it must allow clone with CLONE_NEWUSER, " +
		"mount, pivot_root, unshare) and AppArmor"
	if n, rerr := readInt(apparmorRestrictUser); rerr == nil && n == 1 {
		hint = apparmorRestrictUser + "=1 strips capabilities from unprivileged user namespaces: " +
			"load an AppArmor profile for the gateway that allows \"userns,\", or set it to 0"
	}
	return fmt.Errorf("%w (%s)", err, hint)
}

// checkWithFallbacks runs the self-check and, in rootless mode, retries
// it without what this mode can do without: the subordinate id range
// (unless required) and the delegated cgroup.
func (r *Runner) checkWithFallbacks() error {
	err := r.selfCheck()
	if err != nil && r.ids.kind == idMapSub && r.cfg.IDMap != IDMapSubordinate {
		r.log.Warn().Err(err).Msg("sandbox: runs cannot use the subordinate id range; mapping the gateway's own uid")
		r.ids = ownIDMapper("the subordinate range failed the self-check: " + firstLine(err.Error()))
		r.stopTemplates() // their user namespaces has the maps just given up
		err = r.selfCheck()
	}
	if err != nil && r.mode == ModeRootless && r.cgroups != nil && r.cfg.CgroupDir == "" {
		// A delegated cgroup can be writable and still refuse to take
		// the sandbox (delegation rules on moving processes): rlimits
		// are what this mode falls back to anyway.
		r.log.Warn().Err(err).Msg("sandbox: runs cannot use the delegated cgroup; limiting them with rlimits")
		r.dropCgroups(fmt.Errorf("the cgroup failed the self-check: %w", err))
		err = r.selfCheck()
	}
	return err
}

// describe fills the enforcement report from what the Runner set up.
func (r *Runner) describe() Enforcement {
	e := Enforcement{
		Mode:       r.mode,
		CPU:        fmt.Sprintf("RLIMIT_CPU per process (%s) and a wall-clock kill of the whole sandbox", cpuLimitText(r.cfg)),
		Filesystem: "mount namespace with a private read-only root, size-limited tmpfs for /tmp and /workspace",
		Network:    "empty network namespace; seccomp allows AF_UNIX sockets only",
		Syscalls:   "seccomp allow-list, no capabilities, no_new_privs",
	}
	if r.landlockABI > 0 {
		e.Filesystem += fmt.Sprintf("; Landlock ABI %d", r.landlockABI)
		e.Network += "; Landlock denies TCP"
	} else {
		e.Gaps = append(e.Gaps, "no Landlock on this kernel: the filesystem relies on the mount namespace alone")
	}
	e.UIDs = r.ids.describeUIDs()
	if r.ids.kind == idMapOwnID {
		e.Gaps = append(e.Gaps, "runs share the gateway's uid: no subordinate id range ("+r.ids.why+")")
		if groups, _ := os.Getgroups(); len(groups) > 0 && !(len(groups) == 1 && groups[0] == os.Getgid()) {
			e.Gaps = append(e.Gaps, "runs keep the gateway's supplementary groups (a user namespace cannot drop them); run it as a user without extra groups")
		}
	}
	r.describeLimits(&e)
	e.UserCounts = pid1.DescribeUserCounts()
	return e
}

func (r *Runner) describeLimits(e *Enforcement) {
	mem, pids := r.cfg.MemoryBytes>>20, r.cfg.Pids
	kind, why := enforcedCgroupV1, "no writable cgroup"
	if r.cgroupErr != nil {
		why += " (" + firstLine(r.cgroupErr.Error()) + ")"
	}
	e.Cgroup = "none: " + why
	if r.cgroups != nil {
		if r.cgroups.V2() {
			kind = enforcedCgroupV2
		}
		e.Cgroup = fmt.Sprintf("%s: a cgroup per run under %s, killed as a whole", kind, filepath.Dir(r.cgroups.Root()))
		why = fmt.Sprintf("no %s controller in %s", strings.Join(r.cgroups.Missing(), " or "), kind)
	}
	if r.cgroups.Has("memory") {
		e.Memory = fmt.Sprintf("%s memory limit per run (%d MiB, tmpfs included)", kind, mem)
	} else {
		e.Memory = fmt.Sprintf("%s: RLIMIT_DATA per process (%d MiB), RLIMIT_AS at %d×", enforcedRlimit, mem, pid1.AddressSpaceFactor)
		e.Gaps = append(e.Gaps,
			why+": memory is bounded per process (a failed allocation), not per run: at most processes × memory, "+
				"and tmpfs is bounded by its sizes only")
	}
	if r.cgroups.Has("pids") {
		e.Processes = fmt.Sprintf("%s pids limit per run (%d processes and threads)", kind, pids)
	} else {
		e.Processes = fmt.Sprintf("%s: RLIMIT_NPROC per run, counted in the run's own user namespace (%d processes and threads)", enforcedRlimit, pids)
		if r.cgroups != nil {
			e.Gaps = append(e.Gaps, why+": processes are bounded by RLIMIT_NPROC")
		}
	}
	r.describeCPUShare(e, kind)
}

// describeCPUShare adds the CPU share to the report's cpu line: the
// quota file per run, or why a run may use every core.
func (r *Runner) describeCPUShare(e *Enforcement, kind string) {
	file := "cpu.max"
	if kind == enforcedCgroupV1 {
		file = "CFS quota (cpu.cfs_quota_us)"
	}
	share := "no share limit (a skill's [runtime] cpus sets one)"
	if r.cfg.CPUs > 0 {
		share = fmt.Sprintf("at most %s CPUs (a skill's [runtime] cpus may lower it)", formatCPUs(r.cfg.CPUs))
	}
	if r.cgroups.Has(cgroup.CPU) {
		e.CPU += fmt.Sprintf("; %s %s per run: %s", kind, file, share)
		return
	}
	e.CPU += "; no CPU share limit"
	where := "no writable cgroup"
	if r.cgroups != nil {
		where = fmt.Sprintf("no cpu controller in %s", kind)
	}
	if r.cfg.CPUs > 0 {
		e.Gaps = append(e.Gaps, where+": a run's CPU share is not limited (asked for "+formatCPUs(r.cfg.CPUs)+" CPUs): it may use every core")
	}
}

// formatCPUs prints a CPU count without trailing zeros (1.5, 2, 0.25).
func formatCPUs(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

func cpuLimitText(cfg Config) string {
	if cfg.CPUTime > 0 {
		return cfg.CPUTime.String()
	}
	return "the run's timeout"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// usesRlimits reports whether memory or processes are limited by rlimits.
func (r *Runner) usesRlimits() bool { return !r.cgroups.Has("memory") || !r.cgroups.Has("pids") }

// rlimitsFor returns the per-process limits pid 1 applies to Python for
// what no cgroup bounds.
func (r *Runner) rlimitsFor() (memory int64, procs int) {
	if !r.cgroups.Has("memory") {
		memory = r.cfg.MemoryBytes
	}
	if !r.cgroups.Has("pids") {
		procs = r.cfg.Pids
	}
	return memory, procs
}
