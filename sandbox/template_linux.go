package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/pid1"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// A template is the Runner's factory of sandboxes: Python with the runtime
// imported, in a user, a mount and a network namespace of its own, that
// forks one pid 1 per sandbox (see runtime/_template.py). It never runs job
// code.
type template struct {
	cmd  *exec.Cmd
	conn *net.UnixConn // SOCK_SEQPACKET: one message per sandbox, with its six pipe ends
	dead chan struct{} // closed once the template exited and was reaped
	mu   sync.Mutex    // serializes sends
	// setgroupsDenied: the template's user namespace forbids setgroups
	// (one map an unprivileged process wrote), so runs keep their groups.
	setgroupsDenied bool
}

// templateScript is the template's entry point under the Runner's lib dir.
const templateScript = "runtime/_template.py"

// templateVerb precedes the Runner's name in the template's command line.
const templateVerb = "__skillgate_sandbox_template__"

// startTemplate starts a template for env and waits until it is ready (its
// preloaded modules imported). Like pid 1 of a sandbox started from
// scratch, it is started from a goroutine that keeps its OS thread, so that
// Pdeathsig fires only when the Runner's process dies.
func (r *Runner) startTemplate(env Environment) (*template, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("template socket: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "template"), os.NewFile(uintptr(fds[1]), "template-child")
	// Closed as soon as the template has it: a template that dies before
	// it is ready is then an EOF, not a wait for the timeout.
	defer child.Close()
	fc, err := net.FileConn(parent)
	_ = parent.Close()
	if err != nil {
		return nil, fmt.Errorf("template socket: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		_ = fc.Close()
		return nil, err
	}
	extra := []*os.File{child}
	envFDs, envFiles, err := passEnvironment(env, &extra)
	if err != nil {
		_ = fc.Close()
		_, _ = stderrR.Close(), stderrW.Close()
		return nil, err
	}
	defer closeFiles(envFiles)
	args, err := json.Marshal(map[string]any{"lib_dir": r.libDir, "etc_dir": r.etcDir, "sys": templateSyscalls,
		"seccomp": r.templateSeccomp, "landlock": r.templateLandlock,
		"user_limits": pid1.RunUserLimits, "counted_rlimits": pid1.CountedRlimits,
		"env_fds": envFDs, "env_dirs": env.Paths, "env_paths": env.inRunPaths(), "preload": env.Preload})
	if err != nil {
		_ = fc.Close()
		return nil, err
	}
	if r.hooks.breakTemplate {
		args = []byte("{}")
	}
	tpl := &template{conn: fc.(*net.UnixConn), dead: make(chan struct{})}
	// The Runner's name marks the template (in ps, and for the tests'
	// leftover checks) under a verb of its own: its pid 1s take wire.InitVerb.
	tpl.cmd = exec.Command(r.cfg.Python, "-I", "-B", filepath.Join(r.libDir, templateScript), templateVerb, r.name, string(args))
	tpl.cmd.Env = wire.SandboxEnv
	tpl.cmd.ExtraFiles = extra
	tpl.cmd.Stderr = stderrW
	tpl.cmd.SysProcAttr = r.templateAttr()
	err = tpl.startOnLockedThread()
	_, _ = stderrW.Close(), child.Close()
	closeFiles(envFiles)
	if err != nil {
		_ = stderrR.Close()
		_ = fc.Close()
		if r.mode == ModeRootless {
			err = explainSpawn(err)
		}
		return nil, fmt.Errorf("start the sandbox template: %w", err)
	}
	go r.logTemplate(stderrR)
	if err := r.mapTemplate(tpl); err != nil {
		tpl.stop()
		return nil, fmt.Errorf("start the sandbox template: %w", err)
	}
	if err := tpl.awaitReady(); err != nil {
		tpl.stop()
		return nil, fmt.Errorf("start the sandbox template: %w", err)
	}
	return tpl, nil
}

// startOnLockedThread starts the template; its goroutine reaps it and
// closes dead.
func (tpl *template) startOnLockedThread() error {
	return startOnLockedThread(tpl.cmd, func() {
		_ = tpl.cmd.Wait()
		close(tpl.dead)
	})
}

// awaitReady waits for the template's ready message: "R", or "E" and
// why it cannot serve (a preloaded module that fails to import, or that
// starts threads a fork would not carry over).
func (tpl *template) awaitReady() error {
	_ = tpl.conn.SetReadDeadline(time.Now().Add(templateStartTimeout))
	defer tpl.conn.SetReadDeadline(time.Time{})
	buf := make([]byte, maxStatusLine)
	n, err := tpl.conn.Read(buf)
	switch {
	case err != nil:
		return fmt.Errorf("no ready message: %w", err)
	case n > 0 && buf[0] == templateReady:
		return nil
	case n > 0 && buf[0] == templateFailed:
		return errors.New(string(buf[1:n]))
	}
	return fmt.Errorf("unexpected ready message %q", buf[:n])
}

// The template's ready message.
const (
	templateReady  = 'R'
	templateFailed = 'E'
)

// templateStartTimeout bounds a template's start, preloads included (a
// module such as pandas takes a second to import, more on a loaded host).
const templateStartTimeout = 2 * time.Minute

// templateAttr puts the template in a user namespace mapped as a sandbox
// from scratch is (root inside holds the capabilities to build roots; see
// idMapper) and in a mount and a network namespace of its own; it stays in
// the host's pid namespace, so the pids it reports are the host's.
func (r *Runner) templateAttr() *syscall.SysProcAttr {
	a := r.ids.cloneAttr()
	// A network namespace of its own, owned by its user namespace, is one
	// it may return to after making each sandbox's (it needs no network).
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET
	return a
}

// mapTemplate writes the id maps the clone could not (a subordinate range)
// and then lets the template go on: until then it waits, since an unmapped
// process can create no file. It reads whether the maps allow setgroups.
func (r *Runner) mapTemplate(tpl *template) error {
	if err := r.ids.writeMaps(tpl.cmd.Process.Pid); err != nil {
		return err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/setgroups", tpl.cmd.Process.Pid))
	if err != nil {
		return err
	}
	tpl.setgroupsDenied = strings.TrimSpace(string(data)) == "deny"
	_ = tpl.conn.SetWriteDeadline(time.Now().Add(spawnTimeout))
	_, err = tpl.conn.Write([]byte{templateMapped})
	return err
}

// templateMapped tells the template its ids are mapped.
const templateMapped = 'M'

// logTemplate logs what the template writes to stderr (a crash report).
func (r *Runner) logTemplate(rd *os.File) {
	defer rd.Close()
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 4096), maxStatusLine)
	for sc.Scan() {
		r.log.Warn().Str("line", sc.Text()).Msg("sandbox template")
	}
}

func (tpl *template) alive() bool {
	select {
	case <-tpl.dead:
		return false
	default:
		return true
	}
}

// fork asks the template for a sandbox's pid 1, holding the child ends of
// pipes and configured by cfg (a JSON templateConfig).
func (tpl *template) fork(child [6]*os.File, cfg []byte) error {
	fds := make([]int, len(child))
	for i, f := range child {
		fds[i] = int(f.Fd())
	}
	tpl.mu.Lock()
	defer tpl.mu.Unlock()
	_ = tpl.conn.SetWriteDeadline(time.Now().Add(spawnTimeout))
	_, _, err := tpl.conn.WriteMsgUnix(append([]byte{'S'}, cfg...), unix.UnixRights(fds...), nil)
	runtime.KeepAlive(child)
	if err != nil {
		return fmt.Errorf("sandbox template: %w", err)
	}
	return nil
}

// release lets the template reap a pid 1 the host is done with. A dead
// template has nothing to reap.
func (tpl *template) release(pid int) {
	tpl.mu.Lock()
	defer tpl.mu.Unlock()
	_ = tpl.conn.SetWriteDeadline(time.Now().Add(spawnTimeout))
	_, _ = tpl.conn.Write([]byte("R" + strconv.Itoa(pid)))
}

// stop ends the template; sandboxes it made live on until torn down.
func (tpl *template) stop() {
	_ = tpl.conn.Close() // EOF: the template exits
	select {
	case <-tpl.dead:
	case <-time.After(5 * time.Second):
		_ = tpl.cmd.Process.Kill()
		<-tpl.dead
	}
}

// startFromTemplate is sb.start for a template's sandbox: the template
// reports pid 1, which the host moves into the run's cgroup; then, as from
// scratch, Python's ready byte and its spawned event.
func (sb *sandbox) startFromTemplate(r *Runner) error {
	tpl, release, err := r.acquireTemplate(sb.env)
	if err != nil {
		close(sb.exited)
		close(sb.reaped)
		return err
	}
	// Once pid 1 runs the template may stop: it lives on, reparented.
	defer release()
	zc := r.templateConfig(sb)
	zc.SetgroupsDenied = tpl.setgroupsDenied
	cfg, err := json.Marshal(zc)
	if err != nil {
		close(sb.exited)
		close(sb.reaped)
		return err
	}
	p, err := newPipes()
	if err == nil {
		err = tpl.fork(p.child, cfg)
	}
	if err != nil {
		if p != nil {
			p.close()
		}
		close(sb.exited)
		close(sb.reaped)
		return fmt.Errorf("start sandbox: %w", err)
	}
	sb.adopt(p)
	if err := sb.enterPid1(tpl); err != nil {
		return err
	}
	if err := sb.awaitReady(); err != nil {
		return err
	}
	ws, err := os.OpenRoot(fmt.Sprintf("/proc/%d/root%s", sb.pid, wire.WorkspacePath))
	if err != nil {
		return fmt.Errorf("open sandbox workspace: %w", err)
	}
	sb.ws = ws
	return nil
}

// enterPid1 waits for pid 1's pid, moves it into the run's cgroup (while
// it builds the root) and tells it so. On failure the sandbox's exited and
// reaped are closed: nothing is left to wait for.
func (sb *sandbox) enterPid1(tpl *template) error {
	fail := func(err error) error {
		if sb.pidfd >= 0 {
			_ = unix.PidfdSendSignal(sb.pidfd, unix.SIGKILL, nil, 0)
			_ = unix.Close(sb.pidfd)
			sb.pidfd = -1
		}
		close(sb.exited)
		close(sb.reaped)
		err = sb.templateError(err)
		if sb.pid > 0 {
			tpl.release(sb.pid)
		}
		return err
	}
	ev, err := sb.awaitEvent("pid1", time.Now().Add(spawnTimeout))
	if err != nil {
		return fail(err)
	}
	sb.pid = ev.Pid
	// The template reaps pid 1 only once released: the pid is ours.
	if sb.pidfd, err = unix.PidfdOpen(ev.Pid, 0); err != nil {
		return fail(fmt.Errorf("pidfd of pid 1: %w", err))
	}
	// No phaseForked: pid 1's own phaseEntered stamp is when the template
	// cloned it.
	if err := sb.cg.Attach(ev.Pid); err != nil {
		return fail(err)
	}
	if _, err := sb.ctl.Write([]byte{cgroupJoined}); err != nil {
		return fail(fmt.Errorf("configure sandbox: %w", err))
	}
	go sb.watchPidfd(tpl)
	return nil
}

// cgroupJoined tells a template's pid 1 that it is in the run's cgroup.
const cgroupJoined = 'A'

// awaitEvent waits for a status event ev carrying pids.
func (sb *sandbox) awaitEvent(ev string, deadline time.Time) (wire.Status, error) {
	select {
	case e, ok := <-sb.status.events:
		switch {
		case !ok:
			return e, errors.New("the sandbox template ended the sandbox")
		case e.Ev == wire.EvError:
			return e, errors.New(e.Msg)
		case e.Ev != ev || e.Pid <= 0:
			return e, fmt.Errorf("unexpected %s event", e.Ev)
		}
		return e, nil
	case <-time.After(time.Until(deadline)):
		return wire.Status{}, os.ErrDeadlineExceeded
	}
}

// templateError explains a start that failed before pid 1 was known.
func (sb *sandbox) templateError(cause error) error {
	_ = sb.ctl.Close() // pid 1 gives up
	<-sb.logDone
	msg := cause.Error()
	if raw := sb.status.raw.String(); raw != "" {
		msg += ": " + raw
	}
	return fmt.Errorf("sandbox did not start: %s", msg)
}

// watchPidfd closes exited when pid 1 exits, and reaped once the host is
// done with its pid and has released it to the template.
func (sb *sandbox) watchPidfd(tpl *template) {
	fds := []unix.PollFd{{Fd: int32(sb.pidfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	close(sb.exited)
	<-sb.release
	_ = unix.Close(sb.pidfd)
	tpl.release(sb.pid)
	close(sb.reaped)
}

// templateConfig is what a template's sandbox gets per start: wire.InitConfig.
// What is the same for every sandbox (the syscall numbers the template
// calls through ctypes, the seccomp program and Landlock access sets the
// gateway computed, the Runner's name for pid 1's command line) the
// template gets once, at start.
type templateConfig struct {
	wire.InitConfig
	// SetgroupsDenied: rootless, the supplementary groups stay as they are.
	SetgroupsDenied bool `json:"setgroups_denied"`
}

// templateSyscalls are the syscalls without a libc wrapper or os function
// that the template makes, numbered for this architecture.
var templateSyscalls = map[string]uint64{"clone": unix.SYS_CLONE, "pivot_root": unix.SYS_PIVOT_ROOT,
	"mount_setattr": unix.SYS_MOUNT_SETATTR, "rt_sigaction": unix.SYS_RT_SIGACTION, "move_mount": unix.SYS_MOVE_MOUNT}

func (r *Runner) templateConfig(sb *sandbox) templateConfig {
	zc := templateConfig{InitConfig: r.pid1Config(sb)}
	if r.hooks.breakJobDir {
		zc.JobDir = filepath.Join(sb.dir, "missing")
	}
	return zc
}

// checkTemplate runs the start-up self-check with the template unless it is
// off. In auto mode a template that fails it is logged and dropped, and
// the self-check runs again on sandboxes started from scratch.
func (r *Runner) checkTemplate() error {
	mode, _ := ParseTemplateMode(string(r.cfg.Template)) // validated
	if mode == TemplateOff {
		return r.checkWithFallbacks()
	}
	r.templateOn = true
	r.templateSeccomp = pid1.TemplateSeccomp()
	r.templateLandlock = pid1.TemplateLandlock()
	err := r.checkWithFallbacks()
	if err == nil {
		return nil
	}
	r.templateOn = false
	r.stopTemplates()
	if mode == TemplateOn {
		return fmt.Errorf("sandbox template: %w", err)
	}
	r.log.Warn().Err(err).Msg("sandbox: the template failed its self-check; starting each sandbox from scratch")
	return r.checkWithFallbacks()
}
