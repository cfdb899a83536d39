package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Paths and environment inside the sandbox.
const (
	libMount      = "/opt/skillgate"
	bootScript    = libMount + "/runtime/_boot.py"
	workspacePath = "/workspace"
	hostname      = "sandbox"
)

var sandboxEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + workspacePath,
	"LANG=C.UTF-8",
	"TMPDIR=/tmp",
	"PYTHONDONTWRITEBYTECODE=1",
}

// initProc is the sandbox's pid 1: it builds the root, starts Python
// restricted, reaps every process and reports Python's exit.
type initProc struct {
	status *os.File
	cfg    initConfig
}

// runInit never returns: pid 1 exits when the host closes the control pipe
// (or kills it), which makes the kernel kill everything in the sandbox.
func runInit() {
	// Seccomp and the bounding set are per thread; Python is forked from
	// this thread, which stays locked for good.
	runtime.LockOSThread()
	p := &initProc{status: os.NewFile(fdStatus, "status")}
	if err := shieldInit(); err != nil {
		p.fail(err)
	}
	// Python gets exactly the descriptors ForkExec hands it: not the
	// originals of fds 3..7, nor anything the gateway inherited without
	// close-on-exec from whoever started it.
	if err := closeOnExecFrom(fdCtl); err != nil {
		p.fail(err)
	}
	ctl := os.NewFile(fdCtl, "ctl")
	if err := readFrame(ctl, maxCtlFrame, &p.cfg); err != nil {
		p.fail(fmt.Errorf("read config: %w", err))
	}
	if err := p.setup(); err != nil {
		p.fail(err)
	}
	abi, pid, err := p.spawn()
	if err != nil {
		p.fail(err)
	}
	p.send(statusEvent{Ev: evSpawned, Landlock: abi})
	go func() {
		// The host keeps the write end open for the sandbox's lifetime:
		// EOF means it is gone or done.
		_, _ = io.Copy(io.Discard, ctl)
		os.Exit(0)
	}()
	p.reap(pid)
}

func (p *initProc) send(ev statusEvent) {
	data, _ := json.Marshal(ev)
	_, _ = p.status.Write(append(data, '\n'))
}

func (p *initProc) fail(err error) {
	p.send(statusEvent{Ev: evError, Msg: err.Error()})
	os.Exit(1)
}

// setup builds the sandbox's world before anything untrusted runs.
func (p *initProc) setup() error {
	// Joined the run's cgroup already (the host did it before sending the
	// config); a new cgroup namespace hides the host's cgroup path.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("unshare cgroup namespace: %w", err)
	}
	if err := buildRoot(&p.cfg); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	return setRlimits(&p.cfg)
}

func setRlimits(c *initConfig) error {
	cpu := uint64(c.CPUSeconds)
	for _, l := range []struct {
		res        int
		cur, limit uint64
	}{
		{unix.RLIMIT_NOFILE, uint64(c.OpenFiles), uint64(c.OpenFiles)},
		{unix.RLIMIT_FSIZE, uint64(c.FileSizeBytes), uint64(c.FileSizeBytes)},
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_CPU, cpu, cpu + 1},
	} {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.cur, Max: l.limit}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.res, err)
		}
	}
	return nil
}

// spawn starts Python as the unprivileged sandbox user with no
// capabilities, no-new-privileges, Landlock and seccomp.
func (p *initProc) spawn() (abi, pid int, err error) {
	if err := dropBoundingSet(); err != nil {
		return 0, 0, err
	}
	if err := clearInheritable(); err != nil {
		return 0, 0, err
	}
	if abi, err = restrictLandlock(); err != nil {
		return 0, 0, err
	}
	if err := installSeccomp(); err != nil {
		return 0, 0, err
	}
	attr := &syscall.ProcAttr{
		Dir:   workspacePath,
		Env:   sandboxEnv,
		Files: []uintptr{0, fdLog, fdLog, fdJob, fdResult},
		Sys: &syscall.SysProcAttr{
			Setsid: true,
			// Rootless: setgroups is denied in the user namespace, and
			// the supplementary groups stay what they were.
			Credential: &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, Groups: []uint32{}, NoSetGroups: setgroupsDenied()},
		},
	}
	argv := []string{p.cfg.Python, "-I", "-B", bootScript}
	pid, err = syscall.ForkExec(p.cfg.Python, argv, attr)
	if err != nil {
		return 0, 0, fmt.Errorf("start %s: %w", p.cfg.Python, err)
	}
	if err := limitPython(pid, &p.cfg); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return 0, 0, err
	}
	for _, fd := range []int{fdLog, fdJob, fdResult} {
		_ = unix.Close(fd)
	}
	return abi, pid, nil
}

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

// setgroupsDenied reports whether this user namespace forbids setgroups
// (one an unprivileged process created).
func setgroupsDenied() bool {
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
func limitPython(pid int, c *initConfig) error {
	limits := map[int]uint64{}
	if c.RlimitMemory > 0 {
		limits[unix.RLIMIT_DATA] = uint64(c.RlimitMemory)
		limits[unix.RLIMIT_AS] = uint64(c.RlimitMemory) * addressSpaceFactor
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

// addressSpaceFactor sets RLIMIT_AS relative to RLIMIT_DATA.
const addressSpaceFactor = 4

// closeOnExecFrom marks every descriptor from first on close-on-exec.
func closeOnExecFrom(first int) error {
	err := unix.CloseRange(uint(first), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	entries, rerr := os.ReadDir("/proc/self/fd") // kernels before 5.11
	if rerr != nil {
		return fmt.Errorf("close_range: %w; list fds: %w", err, rerr)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// dropBoundingSet empties this thread's capability bounding set, so that
// nothing executed from it can ever regain a capability.
func dropBoundingSet() error {
	// 63 covers capabilities newer than this package's constants; the
	// kernel answers EINVAL past its last one.
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// reap waits for every process; Python's end is reported to the host.
// Orphans are re-parented to pid 1 and reaped here too.
func (p *initProc) reap(python int) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			select {} // nothing left to reap; wait to be killed
		case pid == python:
			ev := statusEvent{Ev: evExit, CPUMilli: (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6}
			if ws.Signaled() {
				ev.Signal = int(ws.Signal())
			} else {
				ev.Code = ws.ExitStatus()
			}
			p.send(ev)
		}
	}
}
