package pid1

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// initProc is the sandbox's pid 1: it builds the root, starts Python
// restricted, reaps every process and reports Python's exit.
type initProc struct {
	status *os.File
	cfg    wire.InitConfig
	stamps []int64 // the timeline's entered, root and python phases (sandbox/timeline.go)
}

// Main never returns: pid 1 exits when the host closes the control pipe
// (or kills it), which makes the kernel kill everything in the sandbox.
func Main() {
	// Seccomp and the bounding set are per thread; Python is forked from
	// this thread, which stays locked for good.
	runtime.LockOSThread()
	p := &initProc{status: os.NewFile(wire.FDStatus, "status"), stamps: []int64{wire.MonotonicNow()}}
	// Python gets exactly the descriptors ForkExec hands it: not the
	// originals of fds 3 and up (the pipes, the egress socket), nor
	// anything the gateway inherited without close-on-exec from whoever
	// started it.
	if err := closeOnExecFrom(wire.FDCtl); err != nil {
		p.fail(err)
	}
	ctl := os.NewFile(wire.FDCtl, "ctl")
	if err := wire.ReadFrame(ctl, wire.MaxCtlFrame, &p.cfg); err != nil {
		p.fail(fmt.Errorf("read config: %w", err))
	}
	// Shielded only now: a non-dumpable pid 1 belongs to root in /proc,
	// and newuidmap, which the host may run until the config is sent,
	// refuses a process its caller does not own.
	if err := shieldInit(); err != nil {
		p.fail(err)
	}
	if err := p.setup(); err != nil {
		p.fail(err)
	}
	p.stamps = append(p.stamps, wire.MonotonicNow())
	abi, pid, err := p.spawn()
	if err != nil {
		p.fail(err)
	}
	p.stamps = append(p.stamps, wire.MonotonicNow())
	p.send(wire.Status{Ev: wire.EvSpawned, Landlock: abi, Stamps: p.stamps})
	go func() {
		// The host keeps the write end open for the sandbox's lifetime:
		// EOF means it is gone or done.
		_, _ = io.Copy(io.Discard, ctl)
		os.Exit(0)
	}()
	p.reap(pid)
}

func (p *initProc) send(ev wire.Status) {
	data, _ := json.Marshal(ev)
	_, _ = p.status.Write(append(data, '\n'))
}

func (p *initProc) fail(err error) {
	p.send(wire.Status{Ev: wire.EvError, Msg: err.Error()})
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
	if err := unix.Sethostname([]byte(wire.Hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if p.cfg.Network {
		if err := setupNetwork(); err != nil {
			return err
		}
	}
	// pid 1's user namespace is the run's own: what the kernel counts per
	// user there is the run's alone (see RunUserLimits).
	if err := setUserLimits(); err != nil {
		return err
	}
	return setRlimits(&p.cfg)
}

func setRlimits(c *wire.InitConfig) error {
	cpu := uint64(c.CPUSeconds)
	for _, l := range []struct {
		res        int
		cur, limit uint64
	}{
		{unix.RLIMIT_NOFILE, uint64(c.OpenFiles), uint64(c.OpenFiles)},
		{unix.RLIMIT_FSIZE, uint64(c.FileSizeBytes), uint64(c.FileSizeBytes)},
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_CPU, cpu, cpu + 1},
		{unix.RLIMIT_SIGPENDING, RunSigPending, RunSigPending},
		{unix.RLIMIT_MSGQUEUE, runMsgQueueBytes, runMsgQueueBytes},
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
	if abi, err = restrictLandlock(p.cfg.Network); err != nil {
		return 0, 0, err
	}
	if err := InstallSeccomp(p.cfg.Network); err != nil {
		return 0, 0, err
	}
	attr := &syscall.ProcAttr{
		Dir:   wire.WorkspacePath,
		Env:   wire.SandboxEnv,
		Files: []uintptr{0, wire.FDStdout, wire.FDStderr, wire.FDJob, wire.FDResult},
		Sys: &syscall.SysProcAttr{
			Setsid: true,
			// Rootless: setgroups is denied in the user namespace, and
			// the supplementary groups stay what they were.
			Credential: &syscall.Credential{Uid: wire.SandboxUID, Gid: wire.SandboxUID, Groups: []uint32{}, NoSetGroups: SetgroupsDenied()},
		},
	}
	argv := []string{p.cfg.Python, "-I", "-B", wire.BootScript}
	pid, err = syscall.ForkExec(p.cfg.Python, argv, attr)
	if err != nil {
		return 0, 0, fmt.Errorf("start %s: %w", p.cfg.Python, err)
	}
	if err := limitPython(pid, &p.cfg); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return 0, 0, err
	}
	for _, fd := range []int{wire.FDStdout, wire.FDStderr, wire.FDJob, wire.FDResult} {
		_ = unix.Close(fd)
	}
	return abi, pid, nil
}

// closeOnExecFrom marks every descriptor from first on close-on-exec.
func closeOnExecFrom(first int) error {
	err := closeRange(uint(first), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
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
			ev := wire.Status{Ev: wire.EvExit, CPUMilli: (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6}
			if ws.Signaled() {
				ev.Signal = int(ws.Signal())
			} else {
				ev.Code = ws.ExitStatus()
			}
			p.send(ev)
		}
	}
}

// closeRange is close_range(2); a test stands in a kernel without it.
var closeRange = unix.CloseRange
