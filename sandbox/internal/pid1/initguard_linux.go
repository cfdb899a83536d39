package pid1

// What pid 1 does so that neither the code it starts nor the way the
// gateway was started weakens the sandbox: capabilities that must not
// reach Python, signals, and the rlimits that stand in for a cgroup.

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// clearInheritable empties this thread's ambient and inheritable sets. A
// rootless pid 1 holds its capabilities as ambient (hence inheritable)
// ones, which an execve would hand on: none may reach Python.
func clearInheritable() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// shieldInit protects pid 1 from the code it starts. Non-dumpable, its
// memory, /proc/1/exe, environ and root stay closed to a process of the
// same uid without CAP_SYS_PTRACE (rootless, Python shares pid 1's host
// uid). Signals that would end or crash pid 1 (Go's default for them) are
// caught and dropped: only SIGKILL from the host ends it. Caught, not
// ignored: an ignored disposition would be inherited through execve, and
// Python's processes must keep the default ones (multiprocessing ends its
// workers with SIGTERM).
func shieldInit() error {
	resetIgnoredSignals()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make pid 1 non-dumpable: %w", err)
	}
	dropped := make(chan os.Signal, 8)
	signal.Notify(dropped, initCaught...)
	go func() {
		for range dropped {
		}
	}()
	return nil
}

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it (amd64
// and arm64 alike).
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const sigIgn = 1

// resetIgnoredSignals gives every signal the gateway was started with
// ignored (nohup, a shell's background job, a service manager) its default
// disposition back: an ignored one survives execve, and Python would
// inherit it. SIGCHLD among them would even stop pid 1 from reaping.
// Default dispositions are harmless for pid 1 itself: the kernel delivers
// no signal with the default action to a pid namespace's init from inside.
func resetIgnoredSignals() {
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		var old kernelSigaction
		_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0,
			uintptr(unsafe.Pointer(&old)), unsafe.Sizeof(old.mask), 0, 0)
		if errno != 0 || old.handler != sigIgn {
			continue
		}
		dfl := kernelSigaction{}
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)),
			0, unsafe.Sizeof(dfl.mask), 0, 0)
	}
}

// initCaught are the signals Go's runtime would otherwise turn into an
// exit or a crash of pid 1 (SIGCHLD stays: pid 1 reaps).
var initCaught = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
	unix.SIGBUS, unix.SIGFPE, unix.SIGUSR1, unix.SIGSEGV, unix.SIGUSR2, unix.SIGPIPE,
	unix.SIGALRM, unix.SIGTERM, unix.SIGSTKFLT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU,
	unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM, unix.SIGIO, unix.SIGPWR, unix.SIGSYS,
}

// SetgroupsDenied reports whether this user namespace forbids setgroups
// (one an unprivileged process created).
func SetgroupsDenied() bool {
	data, err := os.ReadFile("/proc/self/setgroups")
	return err == nil && strings.TrimSpace(string(data)) == "deny"
}

// limitPython applies the rlimits that stand in for a cgroup. Python
// alone gets them (pid 1's Go runtime needs threads and address space of
// its own), before any job code runs: it is still waiting for its job.
//
// RLIMIT_DATA is the memory limit: it counts the private writable memory
// a process maps (heap, anonymous mmap, thread stacks), not reservations
// such as malloc's per-thread arenas, which make RLIMIT_AS trip threaded
// code long before it uses its memory. RLIMIT_AS, at a multiple, still
// bounds what DATA does not count (shared anonymous mappings).
// RLIMIT_NPROC counts per user and user namespace, so it bounds this run's
// processes and threads, not the gateway's.
func limitPython(pid int, c *wire.InitConfig) error {
	limits := map[int]uint64{}
	if c.RlimitMemory > 0 {
		limits[unix.RLIMIT_DATA] = uint64(c.RlimitMemory)
		limits[unix.RLIMIT_AS] = uint64(c.RlimitMemory) * AddressSpaceFactor
	}
	if c.RlimitProcs > 0 {
		limits[unix.RLIMIT_NPROC] = uint64(c.RlimitProcs)
	}
	for res, val := range limits {
		if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: val, Max: val}, nil); err != nil {
			return fmt.Errorf("prlimit %d on python: %w", res, err)
		}
	}
	return nil
}

// AddressSpaceFactor sets RLIMIT_AS relative to RLIMIT_DATA.
const AddressSpaceFactor = 4
