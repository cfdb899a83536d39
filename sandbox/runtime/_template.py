"""Sandbox template.

One long-lived Python per Runner, started by the gateway in a user and a
mount namespace of its own, with the runtime already imported. It never
runs job code: for each sandbox the gateway sends it the run's
configuration and six pipe ends over the socket on fd 3, and it clones
the sandbox's pid 1 straight into fresh mount, pid, network, IPC and UTS
namespaces. The gateway moves pid 1 into the run's cgroup; pid 1 forks
the job process and then only reaps and reports. The job process enters
a fresh cgroup namespace, builds a private root and pivots into it, takes
the sandbox uid and gid, moves into a user namespace of its own with low
per-user limits, drops every other privilege (bounding set, capabilities,
Landlock, seccomp: the rules are computed by the gateway) and runs the boot
script's main(), which waits for one job exactly as a freshly started
interpreter would.

Only the standard library and ctypes: Python 3.11 has no os.unshare.
"""

import ctypes
import fcntl
import gc
import json
import os
import resource
import signal
import socket
import struct
import sys
import time

LIB_MOUNT = "/opt/skillgate"
ENV_MOUNT = "/opt/env"  # envMount: the run's Python environments
INIT_VERB = "__skillgate_sandbox_init__"
SOCK_FD = 3
SANDBOX_UID = 1000
MAX_FDS = 6
MAX_MSG = 1 << 20

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LANDLOCK_RULE_PATH_BENEATH = 1
CAP_VERSION_3 = 0x20080522

RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_DATA, RLIMIT_CORE = 0, 1, 2, 4
RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_AS = 6, 7, 9

USR_SIBLINGS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")
HOSTNAME = "sandbox"

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
NET_NS = "/proc/self/ns/net"


class SetupError(Exception):
    pass


def check(ret, what):
    if ret < 0:
        err = ctypes.get_errno()
        raise SetupError("%s: %s" % (what, os.strerror(err)))
    return ret


def b(s):
    return None if s is None else s.encode()


def mount(src, dst, fstype, flags, data=None):
    check(libc.mount(b(src), b(dst), b(fstype), flags, b(data)), "mount %s" % dst)


def prctl(op, a=0, c=0, d=0, e=0):
    return check(libc.prctl(op, a, c, d, e), "prctl %d" % op)


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


# --- the template ---------------------------------------------------------


def template_main():
    sock = socket.socket(fileno=SOCK_FD)
    sock.setblocking(True)
    # The gateway may still be writing this process's id maps: until they
    # are in place it can create no file and must not be non-dumpable
    # (newuidmap refuses a process that belongs to root in /proc).
    if sock.recv(1) != b"M":
        os._exit(1)
    args = json.loads(sys.argv[3])  # after the template's marker and the Runner's name
    global TEMPLATE, SECCOMP_PROG, ARG_AREA, LANDLOCK_RULES, LAST_CAP, CLONE_NR, PIVOT_ROOT_NR, PID1_CMDLINE
    TEMPLATE = args
    CLONE_NR, PIVOT_ROOT_NR = args["sys"]["clone"], args["sys"]["pivot_root"]
    SECCOMP_PROG = seccomp_prog(args["seccomp"])
    ARG_AREA = arg_area()
    # The Runner's name marks its pid 1s, as it does those started from
    # scratch (the template's own marker is another).
    PID1_CMDLINE = cmdline_bytes("%s\0%s\0%s" % (sys.executable, INIT_VERB, sys.argv[2]))
    LANDLOCK_RULES = landlock_rules(args.get("landlock") or {})
    LAST_CAP = last_cap()
    lib = args["lib_dir"]
    _setattr_nr[0] = args["sys"]["mount_setattr"]
    reset_ignored_signals(args["sys"]["rt_sigaction"])
    prctl(PR_SET_DUMPABLE, 0)
    # pid 1 starts with the template's working directory: "/" is the one
    # the job process's pivot_root moves along to the run's root.
    os.chdir("/")
    # The network namespace the gateway made for the template, which it
    # owns: it can come back to it after making each sandbox's.
    global OWN_NET
    OWN_NET = os.open(NET_NS, os.O_RDONLY | os.O_CLOEXEC)
    # Its own mount namespace: the runtime is imported from the path it
    # has inside every sandbox, so that tracebacks and lazy imports agree;
    # the read-only part of every sandbox's root is built here once.
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", "/opt", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64,mode=0755")
    os.mkdir(LIB_MOUNT, 0o755)
    mount(lib, LIB_MOUNT, None, MS_BIND | MS_REC)
    env = args.get("env_paths") or []
    global boot
    try:
        mount_environment(args.get("env_fds") or [], args.get("env_dirs") or [], env, args["sys"]["move_mount"])
        build_base(lib, args["etc_dir"], env)
        sys.path.insert(0, LIB_MOUNT)
        import runtime._boot as boot  # noqa: F401  (what every run needs, imported once)
        import random  # noqa: F401  (imported here so that every run reseeds it)
        boot.use_python_path(env)
        failure = preload(args.get("preload") or [])
    except SetupError as exc:
        failure = "set-up: %s" % exc
    sys.stdout.flush()
    sys.stderr.flush()
    if failure:
        sock.send(b"E" + failure.encode()[:4000])
        os._exit(1)
    sock.send(b"R")
    # Every object so far is shared with the sandboxes: no collection may
    # touch them (each write would copy a page into every sandbox).
    gc.disable()
    gc.freeze()
    unreaped = set()
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, MAX_MSG, MAX_FDS)
        if not msg:
            os._exit(0)  # the gateway is gone or closes the Runner
        if msg[:1] == b"S" and len(fds) == MAX_FDS:
            spawn(sock, fds, msg)
        elif msg[:1] == b"R":
            unreaped.add(int(msg[1:]))
        for fd in fds:
            os.close(fd)
        reap(unreaped)


# Libraries that start worker threads when imported (OpenBLAS under numpy,
# OpenMP) start none with these: a fork carries only the forking thread,
# and a run would wait forever on workers it does not have.
SINGLE_THREADED = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def preload(modules):
    """Imports the environment's preloaded modules, whose state every run
    then starts from. The runs' environment is left as it was: a library
    the run loads itself may use its threads. Returns why the template
    cannot serve, or ""."""
    if not modules:
        return ""
    saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
    os.environ.update({k: "1" for k in SINGLE_THREADED})
    try:
        for name in modules:
            try:
                __import__(name)
            except BaseException as exc:  # noqa: BLE001  (reported, the template does not serve)
                return "preload %s: %s: %s" % (name, type(exc).__name__, exc)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        return ("preloading %s left %d threads running: a template forks only its own thread, "
                "so it preloads no module that starts threads" % (", ".join(modules), threads))
    return ""


def reap(pids):
    """Reaps the pid 1s the gateway is done with. Until then a dead one
    stays a zombie: the pid the gateway signals and reads /proc through is
    never reused under it."""
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


def spawn(sock, fds, msg):
    """Clones the sandbox's pid 1 straight into fresh mount, pid, IPC and
    UTS namespaces and the network namespace made for it, tells the gateway
    its pid, then makes the next sandbox's network namespace. The
    configuration is parsed by the job process: every object the template
    makes after its first fork is a page copied while sandboxes still share
    it."""
    status = fds[1]
    net = -1
    try:
        net = _next_net.pop() if _next_net else new_netns()
        check(libc.setns(net, CLONE_NEWNET), "enter the sandbox's network namespace")
        pid = clone(CLONE_NR, CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)
    except SetupError as exc:
        leave_netns()
        if net >= 0:
            os.close(net)
        send(status, {"ev": "error", "msg": str(exc)})
        return
    if pid == 0:
        try:
            entered = now()
            os.close(SOCK_FD)
            os.close(OWN_NET)
            ctypes.memmove(ARG_AREA[0], PID1_CMDLINE, len(PID1_CMDLINE))
            pid1(msg, fds, entered)
        except BaseException as exc:
            fail(status, exc)
        os._exit(1)
    leave_netns()
    os.close(net)
    os.write(status, b'{"ev": "pid1", "pid": %d}\n' % pid)
    _next_net.append(new_netns())


# The network namespace made ahead for the next sandbox: making one takes
# the kernel half a millisecond, more when one being destroyed holds its
# locks, and that is then out of the next start's way. Each is entered by
# one pid 1 only.
_next_net = []


def new_netns():
    check(libc.unshare(CLONE_NEWNET), "new network namespace")
    try:
        return os.open(NET_NS, os.O_RDONLY | os.O_CLOEXEC)
    finally:
        leave_netns()


def leave_netns():
    """Back to the template's own network namespace. A template that could
    not come back would clone the next pid 1s into a namespace made for
    another: it exits instead, and the gateway starts a new one."""
    if libc.setns(OWN_NET, CLONE_NEWNET) != 0:
        os._exit(1)


_pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL across the call
_pylibc.syscall.restype = ctypes.c_long


def clone(nr, flags):
    """os.fork with namespace flags, without the interpreter's before- and
    after-fork steps: they reinitialize the state of other threads (there
    are none here) and run the at-fork hooks (random's reseed, redone
    explicitly), and they write to hundreds of pages the child would
    otherwise share with its parent."""
    pid = _pylibc.syscall(ctypes.c_long(nr), ctypes.c_long(flags | signal.SIGCHLD),
                          ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    if pid < 0:
        raise SetupError("clone: %s" % os.strerror(ctypes.get_errno()))
    return pid


def reset_ignored_signals(nr):
    """Signals the gateway was started with ignored would reach the runs'
    children: give them their defaults back. Python's own ignores stay; the
    raw syscall also reaches the signals libc reserves for itself."""
    keep = {signal.SIGPIPE, signal.SIGXFSZ, signal.SIGKILL, signal.SIGSTOP}
    old = ctypes.create_string_buffer(32)  # struct sigaction as the kernel has it
    dfl = bytes(32)
    for sig in range(1, 65):
        if sig in keep or libc.syscall(nr, sig, None, old, 8) != 0:
            continue
        if struct.unpack_from("<Q", old.raw)[0] == 1:  # SIG_IGN
            libc.syscall(nr, sig, dfl, None, 8)


def arg_area():
    """Where the template's command line lies in memory: at the same
    addresses in every process it forks."""
    with open("/proc/self/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    return int(fields[45]), int(fields[46])


def cmdline_bytes(text):
    """What rewrites this process's command line in place (what ps and
    /proc/PID/cmdline show), within the room the template's own had."""
    start, end = ARG_AREA
    buf = text.encode()[:end - start - 1]
    return buf + b"\0" * (end - start - len(buf))


def set_cmdline(text):
    buf = cmdline_bytes(text)
    ctypes.memmove(ARG_AREA[0], buf, len(buf))


def last_cap():
    """The highest capability this kernel knows: the bounding set is
    dropped up to it."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


def read_full(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            os._exit(1)  # the gateway gave up on this sandbox
        data += chunk
    return data


def send(fd, ev):
    os.write(fd, json.dumps(ev).encode() + b"\n")


def fail(status, exc):
    try:
        send(status, {"ev": "error", "msg": str(exc) or type(exc).__name__})
    finally:
        os._exit(1)


# --- pid 1 of the sandbox --------------------------------------------------


def pid1(msg, fds, entered):
    """pid 1 does as little as it can: each object it touches is a page
    copied from the template, and again when the job process touches it.
    It waits to be moved into the run's cgroup, forks the job process,
    which builds the root, and supervises it."""
    ctl, status, stdout, job, result, stderr = fds
    os.setsid()
    if read_full(ctl, 1) != b"A":
        raise SetupError("no cgroup")
    pid = clone(CLONE_NR, 0)  # without os.fork's after-fork steps: see clone
    if pid == 0:
        # A descriptor no dup2 below can land on reports set-up failures.
        err_fd = fcntl.fcntl(status, fcntl.F_DUPFD_CLOEXEC, 100)
        try:
            job_process(msg, fds, entered, err_fd)
        except BaseException as exc:
            fail(err_fd, exc)
        os._exit(1)
    for fd in (stdout, job, result, stderr):
        os.close(fd)
    supervise(ctl, status, pid)


def supervise(ctl, status, python):
    """pid 1's life once the job process exists, on its one thread (a
    second thread would cost every sandbox a stack and make each of its
    copy-on-write faults a cross-CPU TLB flush): it reaps every child,
    orphans included, reports the job process's exit, and exits when the
    gateway closes ctl, which it holds for the sandbox's lifetime. pid 1's
    exit kills everything inside. The reaping is SIGCHLD's handler: it runs
    while the read of ctl waits, which the interpreter then resumes."""
    _supervised[:] = [status, python]
    # A pid namespace's init gets from inside it only the signals it
    # handles: SIGCHLD, and SIGINT, whose handler Python installs (it
    # would raise KeyboardInterrupt here and end the sandbox). A run with
    # pid 1's host uid (rootless, the gateway's own uid) may signal it
    # where Landlock does not scope signals (before Linux 6.12).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, _on_sigchld)
    # A child that died before the handler was installed sent no signal
    # that runs it.
    reap_exited(status, python)
    while os.read(ctl, 4096):
        pass
    os._exit(0)


_supervised = []  # pid 1's status descriptor and job process, for the handler


def _on_sigchld(signum, frame):
    reap_exited(*_supervised)


def reap_exited(status, python):
    while True:
        try:
            pid, ws, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid != python:
            continue
        # Formatted by hand: pid 1's first use of the json encoder would
        # copy about a hundred of the template's pages.
        how = b'"signal": %d' % os.WTERMSIG(ws) if os.WIFSIGNALED(ws) else b'"code": %d' % os.WEXITSTATUS(ws)
        os.write(status, b'{"ev": "exit", "cpu_ms": %d, %s}\n' % (int((ru.ru_utime + ru.ru_stime) * 1000), how))


def set_rlimits(cfg):
    cpu = cfg["cpu_seconds"]
    for res, cur, hard in ((RLIMIT_NOFILE, cfg["open_files"], cfg["open_files"]),
                           (RLIMIT_FSIZE, cfg["file_size_bytes"], cfg["file_size_bytes"]),
                           (RLIMIT_CORE, 0, 0), (RLIMIT_CPU, cpu, cpu + 1)):
        resource.setrlimit(res, (cur, hard))


# --- the root ---------------------------------------------------------------


BASE_ROOT = "/opt/.root"
# Where each sandbox mounts its root before pivoting into it: a point of
# the template's mount namespace, which every sandbox's is a copy of.
RUN_ROOT = "/opt/.run"


MOVE_MOUNT_F_EMPTY_PATH = 4


def mount_environment(fds, dirs, paths, move_mount_nr):
    """The environment's directories at the paths runs see them at, for
    what the template preloads from them: the detached mounts the gateway
    passed (its root here need not reach them by path), else binds of
    their paths."""
    for i, inside in enumerate(paths):
        if fds:
            os.makedirs(inside, 0o755)
            check(libc.syscall(move_mount_nr, fds[i], b"", AT_FDCWD, inside.encode(), MOVE_MOUNT_F_EMPTY_PATH),
                  "move_mount %s" % inside)
            os.close(fds[i])
        else:
            bind_ro(dirs[i], inside)


def build_base(lib, etc, env):
    """The read-only tree every sandbox's root is a recursive bind of: the
    system directories, /etc, /dev's devices, the runtime, the Python
    environment, and the mount points of what each run gets fresh."""
    r = BASE_ROOT
    mount_tmpfs(r, "size=1m,nr_inodes=512,mode=0755")
    bind_ro("/usr", r + "/usr")
    link_usr_siblings(r)
    bind_ro(lib, r + LIB_MOUNT)
    os.makedirs(r + ENV_MOUNT, 0o755)
    for inside in env:
        bind_ro(inside, r + inside)
    for d in ("/job", "/tmp", "/workspace"):
        os.mkdir(r + d, 0o755)
    # skillsMount and blobsMount, as the gateway lays them out
    os.symlink("/job/skills", r + "/skills")
    os.symlink("/job/blobs", r + "/blobs")
    os.mkdir(r + "/proc", 0o555)
    build_dev(r + "/dev")
    bind_ro(etc, r + "/etc")
    # Not recursive: the devices stay writable, as /dev/null must.
    remount_ro(r, False)
    os.mkdir(RUN_ROOT, 0o755)


def build_root(c):
    """A recursive bind of the base, then what is the run's own: the job,
    /proc of its pid namespace, /tmp, /workspace and /dev/shm."""
    r = RUN_ROOT
    mount(BASE_ROOT, r, None, MS_BIND | MS_REC)
    mount(c["job_dir"], r + "/job", None, MS_BIND | MS_REC)
    remount_ro(r + "/job", True)
    mount("proc", r + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("tmpfs", r + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts(c["tmp_bytes"], "mode=1777"))
    mount("tmpfs", r + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts(c["tmp_bytes"], "mode=1777"))
    mount("tmpfs", r + "/workspace", "tmpfs", MS_NOSUID | MS_NODEV,
          # Readable by pid 1's uid, the gateway's: with a subordinate id
          # range it does not own the run's files.
          tmpfs_opts(c["workspace_bytes"], "mode=0755,uid=%d,gid=%d" % (SANDBOX_UID, SANDBOX_UID)))
    pivot(r, PIVOT_ROOT_NR)


def tmpfs_opts(size, extra):
    return "size=%d,nr_inodes=%d,%s" % (size, max(size // 4096, 1024), extra)


def mount_tmpfs(dst, opts):
    os.makedirs(dst, 0o755, exist_ok=True)
    mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, opts)


def touch(p):
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))


def bind_ro(src, dst):
    if os.path.isdir(src):
        os.makedirs(dst, 0o755, exist_ok=True)
    else:
        touch(dst)
    mount(src, dst, None, MS_BIND | MS_REC)
    remount_ro(dst, True)


_setattr_nr = [None]  # mount_setattr(2), as the gateway numbers it


def remount_ro(dst, recursive):
    nr = _setattr_nr[0]
    if nr is not None:
        attr = struct.pack("<QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
        ret = libc.syscall(nr, AT_FDCWD, dst.encode(), AT_RECURSIVE if recursive else 0, attr, len(attr))
        if ret == 0:
            return
        if ctypes.get_errno() != 38:  # ENOSYS: fall back below
            check(ret, "mount_setattr %s" % dst)
    st = os.statvfs(dst)
    locked = 0
    for stf, msf in ((8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):
        if st.f_flag & stf:
            locked |= msf
    mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | locked)


def link_usr_siblings(r):
    for name in USR_SIBLINGS:
        host = "/" + name
        if os.path.islink(host):
            os.symlink(os.readlink(host), r + "/" + name)
        elif os.path.isdir(host):
            bind_ro(host, r + "/" + name)


def build_dev(dst):
    mount_tmpfs(dst, "size=64k,nr_inodes=64,mode=0755")
    os.mkdir(dst + "/shm", 0o755)
    for d in DEVICES:
        touch(dst + "/" + d)
        mount("/dev/" + d, dst + "/" + d, None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dst + "/" + name)
    mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def pivot(r, nr):
    os.chdir(r)
    check(libc.syscall(nr, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "detach old root")
    os.chdir("/")


# --- the job process ---------------------------------------------------------


def job_process(msg, fds, entered, err_fd):
    ctl, status, stdout, job, result, stderr = fds
    os.setsid()
    # Its own cgroup namespace hides the host's cgroup path (pid 1 and it
    # are in the same cgroup: the root of this namespace).
    check(libc.unshare(CLONE_NEWCGROUP), "unshare cgroup namespace")
    cfg = json.loads(msg[1:])
    build_root(cfg)
    check(libc.sethostname(HOSTNAME.encode(), len(HOSTNAME)), "sethostname")
    stamps = [entered, now()]
    gc.enable()  # the job's own objects are collected as usual
    set_rlimits(cfg)
    # 1, 2: stdout and stderr; 3: the job; 4: the result. Nothing else
    # stays open.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (stdout, stderr, job, result)]
    for target, fd in zip((1, 2, 3, 4), high):
        os.dup2(fd, target)
    if not cfg["setgroups_denied"]:
        os.setgroups([])
    os.setgid(SANDBOX_UID)
    os.setuid(SANDBOX_UID)
    # As after an execve: the run may read its own /proc (and its maps
    # below are its own to write).
    prctl(PR_SET_DUMPABLE, 1)
    own_user_namespace(TEMPLATE["user_limits"])
    # After the namespace: its ancestors' counts are bounded by the limits
    # its creator had, which must not be the run's.
    limit_python(cfg)
    drop_bounding_set()  # a new user namespace starts with a full one
    abi = restrict_landlock(TEMPLATE["landlock"])
    clear_capabilities()
    install_seccomp(SECCOMP_PROG)
    os.chdir("/workspace")
    stamps.append(now())
    # Formatted by hand, as pid 1 of a sandbox started from scratch reports
    # it: the start's phase stamps and the Landlock ABI enforced.
    os.write(err_fd, b'{"ev": "spawned", "landlock": %d, "t": [%s]}\n'
             % (abi, b", ".join(b"%d" % t for t in stamps)))
    os.closerange(5, 1 << 20)
    del abi, ctl, status
    # The environment is the template's, which the gateway set to the
    # sandbox's, and which the template never changes.
    fresh_state()
    sys.argv = [LIB_MOUNT + "/runtime/_boot.py"]
    set_cmdline("%s\0-I\0-B\0%s" % (sys.executable, sys.argv[0]))
    sys.modules["__main__"] = boot
    boot.warm_up()
    boot.main()
    os._exit(0)


def fresh_state():
    """What a new interpreter would not share with other runs: random's
    state (os.urandom keeps none)."""
    import random
    random.seed()


def own_user_namespace(limits):
    """Moves the job process, already the sandbox uid, into a user
    namespace of its own nested in the template's, where it is the same
    uid: the kernel counts processes, pending signals, inotify instances
    and the like per uid of a user namespace, and the runs of one template
    would otherwise share one count. Holding every capability in the new
    namespace until they are cleared, it maps itself and lowers that
    namespace's limits."""
    check(libc.unshare(CLONE_NEWUSER), "new user namespace")
    me = b"%d %d 1" % (SANDBOX_UID, SANDBOX_UID)
    for name, data in (("setgroups", b"deny"), ("uid_map", me), ("gid_map", me)):
        write_file("/proc/self/" + name, data)
    for limit in limits:
        try:
            write_file("/proc/sys/user/" + limit["name"], b"%d" % limit["value"])
        except FileNotFoundError:
            pass  # an older kernel without this count


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def limit_python(cfg):
    for res, value in TEMPLATE["counted_rlimits"]:
        resource.setrlimit(res, (value, value))
    mem, procs = cfg.get("rlimit_memory", 0), cfg.get("rlimit_procs", 0)
    if mem:
        resource.setrlimit(RLIMIT_DATA, (mem, mem))
        resource.setrlimit(RLIMIT_AS, (mem * 4, mem * 4))
    if procs:
        resource.setrlimit(RLIMIT_NPROC, (procs, procs))


def drop_bounding_set():
    for cap in range(LAST_CAP + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() != 22:
            check(-1, "drop capability %d from the bounding set" % cap)


def clear_capabilities():
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    hdr = struct.pack("<Ii", CAP_VERSION_3, 0)
    data = bytes(24)
    check(libc.capset(hdr, data), "capset")


def seccomp_prog(hexprog):
    """struct sock_fprog for the gateway's filter, built once by the
    template; the buffer it points to lives as long as the template."""
    global _seccomp_buf
    prog = bytes.fromhex(hexprog)
    _seccomp_buf = ctypes.create_string_buffer(prog, len(prog))
    return ctypes.create_string_buffer(struct.pack("<HxxxxxxQ", len(prog) // 8, ctypes.addressof(_seccomp_buf)), 16)


def install_seccomp(fprog):
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")


def landlock_rules(ll):
    """The Landlock rules of every run, (path, packed access) pairs: the
    template's view of the host is the layout of every sandbox's root
    (build_base), so they are computed once."""
    if ll.get("abi", 0) <= 0:
        return []
    dirs = ["/usr", "/etc", "/job", LIB_MOUNT, ENV_MOUNT, "/proc", "/dev"]
    dirs += ["/" + n for n in USR_SIBLINGS if os.path.isdir("/" + n) and not os.path.islink("/" + n)]
    rules = [(p, ll["ro"]) for p in dirs]
    rules += [(p, ll["rw"]) for p in ("/workspace", "/tmp", "/dev/shm")]
    rules += [("/dev/" + d, ll["files"]) for d in DEVICES]
    return [(p.encode(), access) for p, access in rules if access]


def restrict_landlock(ll):
    abi = ll["abi"]
    if abi <= 0:
        return 0
    nr = ll["sys"]
    attr = struct.pack("<QQQ", ll["fs"], ll["net"], ll["scoped"])[:ll["attr_size"]]
    fd = check(libc.syscall(nr[0], attr, len(attr), 0), "landlock_create_ruleset")
    try:
        for path, access in LANDLOCK_RULES:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = struct.pack("<Qi", access, pfd)
                check(libc.syscall(nr[1], fd, LANDLOCK_RULE_PATH_BENEATH, rule, 0), "landlock_add_rule %s" % path.decode())
            finally:
                os.close(pfd)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        check(libc.syscall(nr[2], fd, 0), "landlock_restrict_self")
    finally:
        os.close(fd)
    return abi


if __name__ == "__main__":
    template_main()
