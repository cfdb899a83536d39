package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
	"github.com/skillgate/skillgate/sandbox/internal/pid1"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// spawnTimeout bounds a sandbox start (Python included) on a loaded host.
const spawnTimeout = 30 * time.Second

// sandbox is one single-use sandbox: pid 1 (this binary re-executed with
// wire.InitVerb) in fresh namespaces and its own cgroup, Python waiting for a
// job. Created by spawn, used by at most one run, ended by teardown.
type sandbox struct {
	id      string
	dir     string // host directory, private to the sandbox's root uid
	rootDir string // from scratch: the host mount point of its root
	jobDir  string // bound read-only at /job
	// spare takes a template sandbox's directory back, emptied, for the
	// next one (see removeDir); nil from scratch.
	spare    chan<- string
	cg       *cgroup.Run
	cmd      *exec.Cmd
	pid      int
	pidfd    int // from a template: pid 1's pidfd, else -1
	landlock int
	timeline timeline

	ctl      *os.File // write end; closing it ends pid 1
	jobW     *os.File // job pipe (closed once the job is written)
	jobOnce  sync.Once
	result   *os.File // read end of Python's result pipe
	stdoutR  *os.File
	stderrR  *os.File
	statusR  *os.File
	logs     *logBuffer
	logDone  chan struct{}
	status   *statusLog
	ws       *os.Root      // the sandbox's /workspace, reachable after it died
	network  bool          // built with an egress listener (never pooled)
	env      Environment   // the Python environment it was built for
	envFDs   []int         // from scratch: env's directories in pid 1
	egressL  net.Listener  // the egress listener in the sandbox's namespace
	exited   chan struct{} // pid 1 exited (not reaped: its pid stays ours)
	release  chan struct{} // allows reaping pid 1
	reaped   chan struct{}
	tornDown sync.Once
}

// pipes are the parent's and the child's ends, in child fd order 3..8
// (wire.FDCtl..wire.FDStderr).
type pipes struct{ parent, child [6]*os.File }

func newPipes() (*pipes, error) {
	p := &pipes{}
	// Child reads ctl and job; it writes status, stdout, result and stderr.
	childReads := [6]bool{true, false, false, true, false, false}
	for i := range p.child {
		r, w, err := os.Pipe()
		if err != nil {
			p.close()
			return nil, err
		}
		if childReads[i] {
			p.child[i], p.parent[i] = r, w
		} else {
			p.child[i], p.parent[i] = w, r
		}
	}
	return p, nil
}

func (p *pipes) close() {
	for i := range p.child {
		for _, f := range []*os.File{p.child[i], p.parent[i]} {
			if f != nil {
				_ = f.Close()
			}
		}
	}
}

// spawn starts a sandbox for env and waits until Python is ready for a
// job. With network it has an egress listener and the seccomp and Landlock
// rules of a run with network; such sandboxes are started for one run,
// never pooled.
func (r *Runner) spawn(network bool, env Environment) (*sandbox, error) {
	if r.hooks.startFault != nil {
		if err := r.hooks.startFault(); err != nil {
			return nil, err
		}
	}
	sb := &sandbox{
		network: network,
		env:     env,
		logs:    newLogBuffer(MaxLogsPreview, r.cfg.LogsHardCap),
		logDone: make(chan struct{}),
		status:  &statusLog{events: make(chan wire.Status, 8)},
		exited:  make(chan struct{}),
		release: make(chan struct{}),
		reaped:  make(chan struct{}),
		pidfd:   -1,
	}
	sb.timeline.mark(phaseBegin)
	fromTemplate := r.templateOn && !network
	// Like warm sandboxes, what is made ahead and kept for the next start
	// belongs to a Runner with a warm pool; one without keeps nothing.
	keeps := fromTemplate && r.cfg.WarmPool > 0
	var p prepared
	var err error
	if keeps {
		p, err = r.prepareFromAhead()
	} else {
		p, err = r.prepare(fromTemplate)
	}
	if err != nil {
		return nil, err
	}
	sb.id, sb.dir, sb.rootDir, sb.cg = p.id, p.dir, p.rootDir, p.cg
	sb.jobDir = filepath.Join(sb.dir, "job")
	if keeps {
		sb.spare = r.spareDirs
	}
	sb.timeline.mark(phasePrepared)
	start := sb.start
	if fromTemplate {
		start = sb.startFromTemplate
	}
	if err := start(r); err != nil {
		sb.teardown()
		return nil, err
	}
	return sb, nil
}

// prepared is what a sandbox needs on the host before it starts: its
// directory and its cgroup.
type prepared struct {
	id      string
	dir     string
	rootDir string // from scratch: the mount point of its root
	cg      *cgroup.Run
}

// prepare makes a sandbox's host directory and cgroup. The directory holds
// job/ and, for a sandbox started from scratch, root/ (the mount point of
// its root; a template's sandboxes mount theirs on a point of the
// template's own mount namespace). Only the sandbox's root (and host root)
// may enter it. A template's sandbox takes an emptied directory when one
// is spare (only a Runner with a warm pool keeps them).
func (r *Runner) prepare(fromTemplate bool) (prepared, error) {
	p := prepared{id: "s" + strconv.FormatUint(r.seq.Add(1), 10)}
	p.dir = filepath.Join(r.dir, p.id)
	if !fromTemplate {
		p.rootDir = filepath.Join(p.dir, "root")
	}
	var err error
	if fromTemplate {
		select {
		case p.dir = <-r.spareDirs:
			if p.cg, err = r.cgroups.Create(p.id); err != nil {
				_ = os.RemoveAll(p.dir)
			}
			return p, err
		default:
		}
	}
	err = mkdirMode(p.dir, 0o700)
	if err == nil && p.rootDir != "" {
		err = mkdirMode(p.rootDir, 0o755)
	}
	if err == nil {
		err = mkdirMode(filepath.Join(p.dir, "job"), 0o755)
	}
	if err == nil && r.mode == ModeRoot {
		err = os.Chown(p.dir, int(r.cfg.UIDBase), int(r.cfg.UIDBase))
	}
	if err != nil {
		_ = os.RemoveAll(p.dir)
		return p, fmt.Errorf("sandbox dir: %w", err)
	}
	if p.cg, err = r.cgroups.Create(p.id); err != nil {
		_ = os.RemoveAll(p.dir)
		return p, err
	}
	return p, nil
}

// discard removes what prepare made for a sandbox that never started.
func (p prepared) discard() error {
	return errors.Join(p.cg.Destroy(), os.RemoveAll(p.dir))
}

// prepareFromAhead returns the directory and cgroup made ahead for a
// template's sandbox, or makes them now, and has the next ones made
// meanwhile. Starts that follow the runs waiting for them go one at a time
// when one run waits (see refillWidth), which leaves the other CPUs idle:
// the next start then skips this phase.
func (r *Runner) prepareFromAhead() (prepared, error) {
	select {
	case p := <-r.ahead:
		r.prepareAhead()
		return p, nil
	default:
	}
	p, err := r.prepare(true)
	if err == nil {
		r.prepareAhead()
	}
	return p, err
}

// prepareAhead makes the next template sandbox's directory and cgroup in
// the background unless that is under way. A failure is left to the start
// that would have used them, which then prepares its own and reports it.
func (r *Runner) prepareAhead() {
	if !r.aheadBusy.CompareAndSwap(false, true) {
		return
	}
	if !r.enter() {
		r.aheadBusy.Store(false)
		return
	}
	go func() {
		defer r.wg.Done()
		defer r.aheadBusy.Store(false)
		p, err := r.prepare(true)
		if err != nil {
			return
		}
		select {
		case r.ahead <- p:
		default: // one was made meanwhile by a start that found none
			_ = p.discard()
		}
	}()
}

// mkdirMode creates dir with exactly mode, whatever the umask.
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

func (sb *sandbox) start(r *Runner) error {
	p, err := newPipes()
	var egressParent, egressChild *os.File
	if err == nil && sb.network {
		egressParent, egressChild, err = newEgressPair()
	}
	var envFiles []*os.File
	if err == nil {
		sb.cmd = r.initCommand(p.child)
		if egressChild != nil {
			sb.cmd.ExtraFiles = append(sb.cmd.ExtraFiles, egressChild)
		}
		sb.envFDs, envFiles, err = passEnvironment(sb.env, &sb.cmd.ExtraFiles)
	}
	if err == nil {
		err = sb.startOnLockedThread()
		sb.timeline.mark(phaseForked)
	}
	closeFiles(envFiles)
	if egressChild != nil {
		_ = egressChild.Close()
	}
	if egressParent != nil {
		defer egressParent.Close()
	}
	if err != nil && r.mode == ModeRootless {
		err = explainSpawn(err)
	}
	if err != nil {
		if p != nil {
			p.close()
		}
		close(sb.exited) // nothing to wait for or drain in teardown
		close(sb.reaped)
		return fmt.Errorf("start sandbox: %w", err)
	}
	sb.adopt(p)
	if err := r.ids.writeMaps(sb.pid); err != nil {
		return err
	}
	if err := sb.cg.Attach(sb.pid); err != nil {
		return err
	}
	if err := wire.WriteFrame(sb.ctl, r.pid1Config(sb)); err != nil {
		return fmt.Errorf("configure sandbox: %w", err)
	}
	if err := sb.awaitReady(); err != nil {
		return err
	}
	if sb.network {
		l, err := receiveListener(egressParent, time.Now().Add(spawnTimeout))
		if err != nil {
			return err
		}
		sb.egressL = l
	}
	ws, err := os.OpenRoot(fmt.Sprintf("/proc/%d/root%s", sb.pid, wire.WorkspacePath))
	if err != nil {
		return fmt.Errorf("open sandbox workspace: %w", err)
	}
	sb.ws = ws
	return nil
}

// adopt keeps the parent's ends of p, closes the child's and starts
// reading the status and log pipes.
func (sb *sandbox) adopt(p *pipes) {
	sb.ctl, sb.statusR, sb.stdoutR, sb.jobW, sb.result, sb.stderrR = p.parent[0], p.parent[1], p.parent[2], p.parent[3], p.parent[4], p.parent[5]
	for _, f := range p.child {
		_ = f.Close()
	}
	go sb.status.read(sb.statusR)
	go sb.copyLogs()
}

// copyLogs copies Python's stdout and stderr into the logs until both
// pipes end, then closes logDone.
func (sb *sandbox) copyLogs() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for s, f := range map[Stream]*os.File{StreamStdout: sb.stdoutR, StreamStderr: sb.stderrR} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb.copyStream(&mu, s, f)
		}()
	}
	wg.Wait()
	close(sb.logDone)
}

// copyStream copies one pipe into the logs. Each chunk is read and logged
// under mu, shared by both pipes: a chunk read from one pipe is in the
// logs before any chunk read after it from the other. The runtime waits
// until stdout is read before it writes a traceback or a runtime.log line
// (see runtime/_pipe.py), so these land after what the code printed.
func (sb *sandbox) copyStream(mu *sync.Mutex, s Stream, f *os.File) {
	w := sb.logs.stream(s)
	rc, err := f.SyscallConn()
	if err != nil {
		_, _ = io.Copy(w, f)
		return
	}
	buf := make([]byte, 32<<10)
	for ended := false; !ended; {
		err := rc.Read(func(fd uintptr) bool {
			mu.Lock()
			defer mu.Unlock()
			n, err := unix.Read(int(fd), buf)
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				return false // wait until readable
			case n > 0:
				_, _ = w.Write(buf[:n])
			default:
				ended = true // end of the pipe, or it failed
			}
			return true
		})
		ended = ended || err != nil
	}
}

func (r *Runner) initCommand(child [6]*os.File) *exec.Cmd {
	// The Runner's name marks its pid 1s (in ps, and for the tests'
	// leftover checks); pid 1 ignores it.
	cmd := exec.Command("/proc/self/exe", wire.InitVerb, r.name)
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.ExtraFiles = child[:]
	cmd.Stderr = child[1] // a crash report of pid 1 reaches the status reader
	cmd.SysProcAttr = r.ids.cloneAttr()
	return cmd
}

func (r *Runner) pid1Config(sb *sandbox) wire.InitConfig {
	c := wire.InitConfig{
		RootDir:        sb.rootDir,
		JobDir:         sb.jobDir,
		LibDir:         r.libDir,
		EtcDir:         r.etcDir,
		Python:         r.cfg.Python,
		TmpBytes:       r.cfg.TmpBytes,
		WorkspaceBytes: r.cfg.WorkspaceBytes,
		OpenFiles:      r.cfg.OpenFiles,
		FileSizeBytes:  r.cfg.FileSizeBytes,
		CPUSeconds:     cpuSeconds(max(r.cfg.CPUTime, r.cfg.MaxTimeout), 0) + 2,
		Network:        sb.network,
		EnvDirs:        sb.env.Paths,
		EnvFDs:         sb.envFDs,
	}
	c.RlimitMemory, c.RlimitProcs = r.rlimitsFor()
	return c
}

// startOnLockedThread starts pid 1. Its goroutine then notices pid 1's
// exit without reaping it, so the pid cannot be reused while the host
// still uses /proc/<pid>, and reaps it once the sandbox releases it.
func (sb *sandbox) startOnLockedThread() error {
	err := startOnLockedThread(sb.cmd, func() {
		waitExited(sb.cmd.Process.Pid)
		close(sb.exited)
		<-sb.release
		_ = sb.cmd.Wait()
		close(sb.reaped)
	})
	if err == nil {
		sb.pid = sb.cmd.Process.Pid
	}
	return err
}

// startOnLockedThread starts cmd from a goroutine that keeps its OS thread
// until then returns: Pdeathsig fires when the spawning thread exits, not
// the process. then runs on that goroutine once cmd has started.
func startOnLockedThread(cmd *exec.Cmd, then func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		then()
	}()
	return <-started
}

func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// awaitReady waits for Python's ready byte and pid 1's spawned event.
func (sb *sandbox) awaitReady() error {
	deadline := time.Now().Add(spawnTimeout)
	_ = sb.result.SetReadDeadline(deadline)
	var b [1]byte
	_, err := io.ReadFull(sb.result, b[:])
	_ = sb.result.SetReadDeadline(time.Time{})
	if err != nil || b[0] != readyByte {
		return sb.setupError(err)
	}
	sb.timeline.mark(phaseReady)
	select {
	case ev := <-sb.status.events:
		if ev.Ev == wire.EvSpawned {
			sb.landlock = ev.Landlock
			for i, t := range ev.Stamps {
				if phaseEntered+i < phaseReady {
					sb.timeline[phaseEntered+i] = t
				}
			}
			return nil
		}
		return sb.setupError(fmt.Errorf("unexpected %s event", ev.Ev))
	case <-time.After(time.Until(deadline)):
		return sb.setupError(os.ErrDeadlineExceeded)
	}
}

// setupError explains a failed start with what pid 1 reported.
func (sb *sandbox) setupError(cause error) error {
	sb.kill()
	<-sb.exited
	var msgs []string
	for ev := range sb.status.events {
		if ev.Ev == wire.EvError {
			msgs = append(msgs, ev.Msg)
		}
	}
	<-sb.logDone
	if raw := sb.status.raw.String(); raw != "" {
		msgs = append(msgs, raw)
	}
	if logs := sb.logs.Preview(); logs != "" {
		msgs = append(msgs, "python: "+logs)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("sandbox did not start: %w", cause)
	}
	return fmt.Errorf("sandbox did not start: %v", msgs)
}

// alive reports whether pid 1 still runs.
func (sb *sandbox) alive() bool {
	select {
	case <-sb.exited:
		return false
	default:
		return true
	}
}

// idle reports whether a pooled sandbox can still take a job: pid 1 runs
// and has reported nothing since Python became ready (any event, such as
// Python's exit, means it cannot).
func (sb *sandbox) idle() bool {
	if !sb.alive() {
		return false
	}
	select {
	case <-sb.status.events:
		return false
	default:
		return true
	}
}

// kill ends pid 1, which makes the kernel kill every process of the
// sandbox's pid namespace. The pid is ours until reaped, so this is safe.
func (sb *sandbox) kill() {
	if sb.pidfd >= 0 && sb.alive() {
		_ = unix.PidfdSendSignal(sb.pidfd, unix.SIGKILL, nil, 0)
		return
	}
	if sb.pidfd < 0 && sb.pid > 0 && sb.alive() {
		_ = syscall.Kill(sb.pid, syscall.SIGKILL)
	}
}

// closeJob closes the job pipe once (after delivery, or unused).
func (sb *sandbox) closeJob() {
	sb.jobOnce.Do(func() { _ = sb.jobW.Close() })
}

// teardown kills the sandbox, reaps pid 1 and removes its cgroup and
// directory. Idempotent.
func (sb *sandbox) teardown() error {
	var err error
	sb.tornDown.Do(func() { err = sb.doTeardown() })
	return err
}

func (sb *sandbox) doTeardown() error {
	sb.kill()
	<-sb.exited
	close(sb.release)
	<-sb.reaped
	if sb.jobW != nil {
		sb.closeJob()
		<-sb.logDone
		for _, f := range []*os.File{sb.ctl, sb.result, sb.stdoutR, sb.stderrR, sb.statusR} {
			_ = f.Close()
		}
	}
	if sb.ws != nil {
		_ = sb.ws.Close()
	}
	if sb.egressL != nil {
		_ = sb.egressL.Close()
	}
	return errors.Join(sb.cg.Destroy(), sb.removeDir())
}

// removeDir removes the sandbox's host directory, or empties it and hands
// it to the next template sandbox: a directory made and removed per start
// costs an inode's allocation and release on the host's filesystem (on
// ext4, a twentieth of a sustained start's CPU). Nothing of the sandbox is
// left to reach it: its processes are gone, and it was bound read-only.
func (sb *sandbox) removeDir() error {
	if sb.spare != nil && emptyDir(sb.jobDir) == nil {
		select {
		case sb.spare <- sb.dir:
			return nil
		default:
		}
	}
	return os.RemoveAll(sb.dir)
}

// emptyDir removes what dir holds.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// runInit is pid 1 of a sandbox started from scratch (see MaybeInit).
func runInit() { pid1.Main() }
