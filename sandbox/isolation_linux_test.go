package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

func TestIsolationProcessIdentity(t *testing.T) {
	r := sharedRunner(t)
	code := `
import os, socket

def main(args):
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = " ".join(v.split())
    with open("/proc/self/cgroup") as f:
        cgroup = f.read()
    return {"status": status, "cgroup": cgroup, "hostname": socket.gethostname(),
            "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "pid": os.getpid(), "groups": os.getgroups(), "cwd": os.getcwd()}
`
	out := output(t, run(t, r, code, nil))
	st := out["status"].(map[string]any)
	assert.Equal(t, "1", st["NoNewPrivs"])
	assert.Equal(t, "2", st["Seccomp"])
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Equal(t, "0000000000000000", st[c], c)
	}
	assert.Equal(t, "1000 1000 1000 1000", st["Uid"])
	assert.Equal(t, "1000 1000 1000 1000", st["Gid"])
	if r.mode == ModeRoot {
		assert.Empty(t, out["groups"])
	} else {
		// A user namespace cannot drop the gateway's supplementary
		// groups; unmapped, they show as the overflow gid.
		for _, g := range out["groups"].([]any) {
			assert.Equal(t, 65534.0, g)
		}
	}
	assert.Equal(t, wire.Hostname, out["hostname"])
	assert.Equal(t, "/workspace", out["cwd"])
	// Only pid 1 (the reaper) and Python itself.
	assert.Equal(t, []any{1.0, out["pid"]}, out["procs"])
	assert.NotContains(t, out["cgroup"], cgroup.Prefix, "the cgroup namespace hides the host path")
}

// TestIsolationNoInheritedDescriptors plants a descriptor without
// close-on-exec in the gateway (as a careless parent process would) and
// checks that Python holds only its own.
func TestIsolationNoInheritedDescriptors(t *testing.T) {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC on purpose
	require.NoError(t, err)
	defer syscall.Close(fd)
	r := ownRunner(t, nil)
	code := "import os\n\ndef main(args):\n    return sorted(int(fd) for fd in os.listdir('/proc/self/fd'))\n"
	res := run(t, r, code, nil)
	requireCompleted(t, res)
	// stdin, stdout, stderr, the listing itself (3, where the job pipe
	// was), the result pipe and the output blob directory.
	assert.JSONEq(t, `[0, 1, 2, 3, 4, 5]`, string(res.Output))
}

func TestIsolationHostFilesInvisible(t *testing.T) { forEachIDMap(t, isolationHostFilesInvisible) }

func isolationHostFilesInvisible(t *testing.T, r *Runner) {
	// Stand-ins for the gateway's data and skills directories.
	dir := t.TempDir()
	for _, p := range []string{"data/blobs/blob-1", "skills/acme/skill.toml"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("TOPSECRET"), 0o644))
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	home, err := os.UserHomeDir()
	if err != nil || slices.Contains([]string{"/", "/tmp", wire.WorkspacePath}, filepath.Clean(home)) {
		home = t.TempDir() // a path the sandbox has a directory of its own at says nothing
	}
	paths := []string{
		filepath.Join(dir, "data/blobs/blob-1"), filepath.Join(dir, "skills/acme/skill.toml"), dir, home,
		"/etc/shadow", "/root", "/home", "/var", "/sys", "/boot", "/srv", r.dir, r.cfg.WorkDir, exe,
		"/proc/1/root/etc/shadow", "/proc/1/environ", "/proc/1/cwd", "/job/../etc/shadow", "/oldroot",
		"/proc/kcore", "/proc/sysrq-trigger",
	}
	code := `
import os

def main(args):
    out = {}
    for p in args["paths"]:
        try:
            if os.path.isdir(p):
                out[p] = "listed:" + ",".join(os.listdir(p))
            else:
                with open(p, "rb") as f:
                    out[p] = "read:" + f.read(4096).decode("latin-1")
        except OSError as e:
            out[p] = type(e).__name__
    with open("/etc/passwd") as f:
        out["passwd"] = f.read()
    return out
`
	out := output(t, run(t, r, code, map[string]any{"paths": paths}))
	for _, p := range paths {
		got := out[p].(string)
		assert.NotContains(t, got, "TOPSECRET", p)
		assert.False(t, strings.HasPrefix(got, "read:") || strings.HasPrefix(got, "listed:"), "%s: %s", p, got)
	}
	assert.NotContains(t, out["passwd"], "daemon:", "the sandbox has its own /etc/passwd")
}

func TestIsolationWritesOutsideWorkspaceFail(t *testing.T) {
	r := sharedRunner(t)
	code := `
import os

def main(args):
    out = {}
    for p in args["paths"]:
        try:
            with open(p, "w") as f:
                f.write("x")
            out[p] = "ok"
        except OSError as e:
            out[p] = type(e).__name__
    return out
`
	denied := []string{"/x", "/usr/x", "/usr/bin/python3", "/etc/passwd", "/etc/x", "/job/x", wire.LibMount + "/x",
		wire.LibMount + "/runtime/blobs.py", "/dev/x", "/proc/sys/kernel/hostname", "/proc/1/attr/current", "/bin/x"}
	allowed := []string{"/tmp/x", "/workspace/x", "/dev/null"}
	out := output(t, run(t, r, code, map[string]any{"paths": append(append([]string{}, denied...), allowed...)}))
	for _, p := range denied {
		assert.NotEqual(t, "ok", out[p], p)
	}
	for _, p := range allowed {
		assert.Equal(t, "ok", out[p], p)
	}
}

func TestIsolationNoNetwork(t *testing.T) {
	r := sharedRunner(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	abstract := "@skillgate-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	uln, err := net.Listen("unix", abstract)
	require.NoError(t, err)
	defer uln.Close()
	code := `
import socket

def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return type(e).__name__ + ":" + str(e.errno)

def tcp(host, port):
    s = socket.create_connection((host, port), timeout=1)
    s.close()

def main(args):
    port = args["port"]
    return {
        "tcp": attempt(lambda: tcp("127.0.0.1", port)),
        "tcp6": attempt(lambda: tcp("::1", port)),
        "udp": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", port))),
        "netlink": attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
        "packet": attempt(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)),
        "dns": attempt(lambda: socket.getaddrinfo("example.com", 80)),
        "abstract": attempt(lambda: socket.socket(socket.AF_UNIX).connect("\0" + args["abstract"][1:])),
        "unix_pair": attempt(lambda: socket.socketpair()),
    }
`
	addr := ln.Addr().(*net.TCPAddr)
	out := output(t, run(t, r, code, map[string]any{"port": addr.Port, "abstract": abstract}))
	require.NoError(t, ln.Close())
	for c := range accepted {
		c.Close()
		t.Error("the host listener accepted a connection from the sandbox")
	}
	for _, k := range []string{"tcp", "tcp6", "udp", "netlink", "packet", "abstract"} {
		assert.NotEqual(t, "ok", out[k], k)
	}
	eafnosupport := "OSError:" + strconv.Itoa(int(unix.EAFNOSUPPORT))
	assert.Equal(t, eafnosupport, out["netlink"], "seccomp allows only AF_UNIX")
	assert.NotEqual(t, "ok", out["dns"])
	assert.Equal(t, "ok", out["unix_pair"], "AF_UNIX stays usable")
}

func TestIsolationHostProcesses(t *testing.T) { forEachIDMap(t, isolationHostProcesses) }

func isolationHostProcesses(t *testing.T, r *Runner) {
	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	defer func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	}()
	code := `
import ctypes, os, signal, time

def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return type(e).__name__

def main(args):
    out = {}
    for pid in args["pids"]:
        out[str(pid)] = attempt(lambda: os.kill(pid, signal.SIGKILL))
    for sig in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGSEGV", "SIGABRT", "SIGPIPE", "SIGKILL"):
        out["init " + sig] = attempt(lambda: os.kill(1, getattr(signal, sig)))
    out["group"] = attempt(lambda: os.killpg(1, signal.SIGKILL))
    libc = ctypes.CDLL(None, use_errno=True)
    for name, pid in (("gateway", args["pids"][1]), ("init", 1)):
        ctypes.set_errno(0)
        rc = libc.ptrace(ctypes.c_long(16), ctypes.c_long(pid), None, None)  # PTRACE_ATTACH
        out["ptrace " + name] = ctypes.get_errno() if rc != 0 else "attached"
    # Were pid 1 to die of any of them, the kernel would kill this
    # process with its pid namespace and the run would not complete.
    time.sleep(0.2)
    return out
`
	pids := []int{sleeper.Process.Pid, os.Getpid(), os.Getppid()}
	out := output(t, run(t, r, code, map[string]any{"pids": pids}))
	for _, pid := range pids {
		assert.NotEqual(t, "ok", out[strconv.Itoa(pid)], "pid %d", pid)
	}
	if r.ids.kind != idMapOwnID {
		// With the gateway's own uid, pid 1 shares Python's host uid:
		// the signals are allowed, and pid 1 ignores them (the run
		// completed).
		assert.Equal(t, "PermissionError", out["init SIGKILL"], "the reaper cannot be killed from inside")
	}
	assert.NotEqual(t, "ok", out["group"])
	for _, who := range []string{"gateway", "init"} {
		assert.Equal(t, float64(unix.EPERM), out["ptrace "+who], "ptrace %s", who)
	}
	assert.NoError(t, sleeper.Process.Signal(syscall.Signal(0)), "the host process survived")
}

// TestRunProcessesKeepDefaultSignals checks that neither what pid 1 does
// to survive signals nor what the gateway was started with reaches Python:
// its processes can be ended with SIGTERM (multiprocessing relies on it),
// and Python ignores only what it ignores itself (SIGPIPE, SIGXFSZ). The
// gateway here ignores SIGHUP and signal 32, as under nohup or a parent
// that ignores everything: Go's runtime re-handles most signals in pid 1
// by itself, but leaves these two (and 33) as it found them.
func TestRunProcessesKeepDefaultSignals(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	ign := testSigaction{handler: 1} // SIG_IGN
	var old testSigaction
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, 32, uintptr(unsafe.Pointer(&ign)),
		uintptr(unsafe.Pointer(&old)), unsafe.Sizeof(old.mask), 0, 0)
	require.Zero(t, errno)
	defer unix.RawSyscall6(unix.SYS_RT_SIGACTION, 32, uintptr(unsafe.Pointer(&old)), 0, unsafe.Sizeof(old.mask), 0, 0)
	r := ownRunner(t, nil)
	code := `
import subprocess

def main(args):
    with open("/proc/self/status") as f:
        ign = [l.split()[1] for l in f if l.startswith("SigIgn:")][0]
    p = subprocess.Popen(["/bin/sleep", "60"])
    p.terminate()
    return {"ignored": ign, "child": p.wait()}
`
	out := output(t, run(t, r, code, nil))
	ignored := uint64(1)<<(unix.SIGPIPE-1) | uint64(1)<<(unix.SIGXFSZ-1)
	assert.Equal(t, fmt.Sprintf("%016x", ignored), out["ignored"])
	assert.Equal(t, -float64(unix.SIGTERM), out["child"])
}

// TestIsolationInitIsShielded reaches for pid 1 (the gateway binary, with
// capabilities in the sandbox's user namespace) through /proc. Rootless,
// it runs as Python's own host uid: only its being non-dumpable keeps its
// memory and binary closed.
func TestIsolationInitIsShielded(t *testing.T) { forEachIDMap(t, isolationInitIsShielded) }

func isolationInitIsShielded(t *testing.T, r *Runner) {
	code := `
import os

def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return type(e).__name__

def read(path):
    with open(path, "rb") as f:
        f.read(64)

def write_mem():
    with open("/proc/1/mem", "r+b") as f:
        f.write(b"x")

def main(args):
    out = {p: attempt(lambda: read(p)) for p in
           ("/proc/1/exe", "/proc/1/mem", "/proc/1/environ", "/proc/1/maps", "/proc/1/auxv")}
    out["write /proc/1/mem"] = attempt(write_mem)
    out["list /proc/1/root"] = attempt(lambda: os.listdir("/proc/1/root"))
    out["list /proc/1/fd"] = attempt(lambda: os.listdir("/proc/1/fd"))
    out["readlink /proc/1/exe"] = attempt(lambda: os.readlink("/proc/1/exe"))
    return out
`
	out := output(t, run(t, r, code, nil))
	require.NotEmpty(t, out)
	for what, got := range out {
		assert.NotEqual(t, "ok", got, what)
	}
}

// TestIsolationSeccomp calls denied syscalls by number (this architecture's
// numbers come from Go) and expects the filter's answer rather than the
// kernel's: most would succeed, or fail differently, without the filter.
func TestIsolationSeccomp(t *testing.T) {
	r := sharedRunner(t)
	calls := map[string][3]int{ // name: nr, arg0, expected errno
		"unshare_user":  {unix.SYS_UNSHARE, unix.CLONE_NEWUSER, int(unix.EPERM)},
		"setns":         {unix.SYS_SETNS, -1, int(unix.EPERM)},
		"mount":         {unix.SYS_MOUNT, 0, int(unix.EPERM)},
		"umount2":       {unix.SYS_UMOUNT2, 0, int(unix.EPERM)},
		"ptrace_me":     {unix.SYS_PTRACE, unix.PTRACE_TRACEME, int(unix.EPERM)},
		"bpf":           {unix.SYS_BPF, 0, int(unix.EPERM)},
		"io_uring":      {unix.SYS_IO_URING_SETUP, 1, int(unix.EPERM)},
		"perf":          {unix.SYS_PERF_EVENT_OPEN, 0, int(unix.EPERM)},
		"keyctl":        {unix.SYS_KEYCTL, 0, int(unix.EPERM)},
		"add_key":       {unix.SYS_ADD_KEY, 0, int(unix.EPERM)},
		"userfaultfd":   {unix.SYS_USERFAULTFD, 0, int(unix.EPERM)},
		"personality":   {unix.SYS_PERSONALITY, 0xffffffff, int(unix.EPERM)},
		"process_vm_rd": {unix.SYS_PROCESS_VM_READV, 1, int(unix.EPERM)},
		"kexec":         {unix.SYS_KEXEC_LOAD, 0, int(unix.EPERM)},
		"init_module":   {unix.SYS_INIT_MODULE, 0, int(unix.EPERM)},
		"reboot":        {unix.SYS_REBOOT, 0, int(unix.EPERM)},
		"swapon":        {unix.SYS_SWAPON, 0, int(unix.EPERM)},
		"chroot":        {unix.SYS_CHROOT, 0, int(unix.EPERM)},
		"pivot_root":    {unix.SYS_PIVOT_ROOT, 0, int(unix.EPERM)},
		"open_tree":     {unix.SYS_OPEN_TREE, -1, int(unix.EPERM)},
		"clone3":        {unix.SYS_CLONE3, 0, int(unix.ENOSYS)},
		"clone_newuser": {unix.SYS_CLONE, unix.CLONE_NEWUSER | int(unix.SIGCHLD), int(unix.EPERM)},
		"clone_newnet":  {unix.SYS_CLONE, unix.CLONE_NEWNET | int(unix.SIGCHLD), int(unix.EPERM)},
		"socket_inet":   {unix.SYS_SOCKET, unix.AF_INET, int(unix.EAFNOSUPPORT)},
	}
	code := `
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def main(args):
    out = {}
    for name, (nr, arg0, _) in sorted(args["calls"].items()):
        ctypes.set_errno(0)
        rc = libc.syscall(ctypes.c_long(nr), ctypes.c_long(arg0), ctypes.c_long(0),
                          ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
        out[name] = ctypes.get_errno() if rc < 0 else "succeeded"
    pid = os.fork()  # plain fork still works
    if pid == 0:
        os._exit(7)
    out["fork"] = os.waitpid(pid, 0)[1] >> 8
    return out
`
	out := output(t, run(t, r, code, map[string]any{"calls": calls}))
	for name, c := range calls {
		assert.Equal(t, float64(c[2]), out[name], "%s: want %s", name, syscall.Errno(c[2]))
	}
	assert.Equal(t, 7.0, out["fork"])
}

func TestIsolationLandlock(t *testing.T) {
	r := sharedRunner(t)
	if r.landlockABI == 0 {
		t.Skip("Landlock unavailable on this kernel")
	}
	code := `
import os

def main(args):
    try:
        os.listdir("/")
        return "listed"
    except PermissionError:
        return "denied"
`
	res := run(t, r, code, nil)
	requireCompleted(t, res)
	assert.JSONEq(t, `"denied"`, string(res.Output), "Landlock grants no access to the root directory itself")
}

func TestIsolationWorkspaceIsFreshPerRun(t *testing.T) {
	r := sharedRunner(t)
	code := `
import os

def main(args):
    seen = sorted(os.listdir("/workspace")) + sorted(os.listdir("/tmp"))
    for p in ("/workspace/mark", "/tmp/mark"):
        with open(p, "w") as f:
            f.write("x")
    return seen
`
	for range 3 {
		res := run(t, r, code, nil)
		requireCompleted(t, res)
		assert.JSONEq(t, `[".blobs", "outputs"]`, string(res.Output))
	}
}

// testSigaction is the kernel's struct sigaction (rt_sigaction), as pid 1
// reads it to reset what was ignored.
type testSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}
