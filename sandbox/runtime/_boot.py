"""Sandbox entry point.

Started inside the sandbox before any job is known: it imports what every
run needs, tells the gateway it is ready, waits for exactly one job on
JOB_FD, runs it and writes one length-prefixed JSON result to RESULT_FD.
The process is never reused.
"""

import os
import sys

JOB_FD = 3
RESULT_FD = 4
OUTPUT_LIMIT = 4096
MESSAGE_LIMIT = 1024
BLOB_DIR = "/workspace/.blobs"
# Files left here when the run ends become output blobs, in name order.
OUTPUT_DIR = "/workspace/outputs"
CODE_NAME = "<code>"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import importlib  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import resource  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

import runtime  # noqa: E402
from runtime import _pipe, _skills, blobs  # noqa: E402


def read_job():
    chunks = []
    while True:
        chunk = os.read(JOB_FD, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(JOB_FD)
    return json.loads(b"".join(chunks))


def send(obj):
    # Untagged, after the lock: a thread of the code still reporting
    # cannot cut into the result frame.
    _pipe.send(b"", json.dumps(obj, ensure_ascii=True).encode("ascii"))


def limit_cpu(seconds):
    """Lower RLIMIT_CPU to what the job may use from now on."""
    if seconds <= 0:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    _, cur_hard = resource.getrlimit(resource.RLIMIT_CPU)
    hard = soft + 1
    if cur_hard != resource.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def blob_dir():
    """The directory output blobs are written to, and the one whose files
    become blobs, made before any job."""
    os.mkdir(OUTPUT_DIR, 0o755)
    # Readable by others, whatever the umask: with a subordinate id range
    # the gateway, which collects the blobs, does not own them.
    os.mkdir(BLOB_DIR, 0o755)
    fd = os.open(BLOB_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    os.fchmod(fd, 0o755)
    return fd


NO_NETWORK = ("this run has no network: a skill gets it from the destinations its skill.toml lists "
              "in [permissions] network, run_code from the caller's run_code_network in the auth file "
              "(--run-code-network without one)")


def explain_no_network():
    """Makes a run without network say so, and which permission grants it,
    where it would otherwise see a bare resolver error or a refused socket
    (the sandbox refuses every socket but AF_UNIX without network)."""
    import socket

    resolve, init = socket.getaddrinfo, socket.socket.__init__

    def explained(exc):
        return type(exc)(exc.errno, "%s (%s)" % (exc.strerror, NO_NETWORK))

    def getaddrinfo(*args, **kwargs):
        try:
            return resolve(*args, **kwargs)
        except socket.gaierror as exc:
            raise explained(exc) from None

    def socket_init(sock, family=-1, *args, **kwargs):
        try:
            init(sock, family, *args, **kwargs)
        except OSError as exc:
            if family == socket.AF_UNIX or exc.errno is None:
                raise
            raise explained(exc) from None

    socket.getaddrinfo = getaddrinfo
    socket.socket.__init__ = socket_init


def use_python_path(paths):
    """Puts the run's Python environments first in the search path, after
    the runtime, and in PYTHONPATH for the Python processes the run starts
    (subprocess, python3 from bash). Their packages come before the
    host's."""
    if not paths:
        return
    for i, p in enumerate(paths):
        if p not in sys.path:
            sys.path.insert(1 + i, p)
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)


def prepare(job, dir_fd):
    limit_cpu(job.get("cpu_seconds", 0))
    use_python_path(job.get("python_path"))
    if not job.get("network"):
        explain_no_network()
    os.environ.update(job.get("env") or {})
    runtime.run_id = job.get("run_id", "")
    inputs = {b["id"]: b["path"] for b in job.get("inputs") or []}
    blobs._configure(inputs, job.get("outputs") or [], dir_fd, job.get("max_blob_bytes", 0))
    _skills.install(job.get("skills") or [])


def load_code(source):
    # The source never touches the disk; linecache serves it to tracebacks.
    linecache.cache[CODE_NAME] = (len(source), None, source.splitlines(True), CODE_NAME)
    module = types.ModuleType("job")
    module.__file__ = CODE_NAME
    sys.modules["job"] = module
    exec(compile(source, CODE_NAME, "exec", dont_inherit=True), module.__dict__)
    return module, "the code"


def load_skill(job):
    name = "%s.%s.%s" % (_skills.PACKAGE, job["skill"], job["module"])
    return importlib.import_module(name), "skill %s (%s)" % (job["skill"], job["module"])


def entrypoint(job):
    module, where = load_skill(job) if job.get("skill") else load_code(job.get("code", ""))
    name = job.get("entrypoint") or "main"
    fn = getattr(module, name, None)
    if fn is None:
        raise AttributeError("entrypoint %r is not defined in %s" % (name, where))
    if not callable(fn):
        raise TypeError("entrypoint %r in %s is not callable" % (name, where))
    return fn


def call(job):
    value = entrypoint(job)(job.get("args") or {})
    if isinstance(value, types.CoroutineType):
        import asyncio
        value = asyncio.run(value)
    return value


def text(exc):
    try:
        msg = str(exc)
    except BaseException:
        msg = "<unprintable %s>" % type(exc).__name__
    return msg[:MESSAGE_LIMIT]


def print_traceback(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    _pipe.settle((1,))  # the traceback after what the code printed
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.__stderr__)
    except BaseException:
        pass


def failure(kind, message, runtime=False):
    """A failed result. runtime marks the runtime's own verdicts (limits, a
    failed set-up); without it kind is an exception class of the code."""
    return {"ok": False, "type": kind, "message": message, "runtime": runtime}


def encode(value):
    try:
        out = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        return None, failure(type(exc).__name__,
                             "the return value is not JSON-serializable: " + text(exc))
    size = len(out.encode("utf-8"))
    if size > OUTPUT_LIMIT:
        return None, failure("OUTPUT_TOO_LARGE", (
            "the return value is %d bytes serialized; the limit is %d bytes: "
            "write larger data to a blob with runtime.blobs.write_json" % (size, OUTPUT_LIMIT)), True)
    return out, None


def run_bash(job):
    """Runs the code with /bin/bash in this run's sandbox: the same mounts,
    environment, limits and log pipes (fds 1 and 2 are inherited, so its
    output streams like print's). Exit status 0 completes the run."""
    flush()
    try:
        pid = os.posix_spawn("/bin/bash", ["bash", "-c", job.get("code", "")], os.environ)
        _, status = os.waitpid(pid, 0)
    except BaseException as exc:
        print_traceback(exc)
        return failure(type(exc).__name__, "starting /bin/bash: " + text(exc))
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        try:
            files = collect_outputs()
        except BaseException as exc:
            return outputs_failure(exc)
        output = {"exit_code": 0}
        if files:
            output["outputs"] = files
        out, fail = encode(output)
        if fail is not None:
            return fail
        return {"ok": True, "output": out, "blobs": blobs._manifest()}
    if code < 0:
        import signal
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return failure("ExitStatus", "bash was killed by %s (signal %d)" % (name, -code))
    return failure("ExitStatus", "bash exited with status %d" % code)


def collect_outputs():
    """Moves the files left in OUTPUT_DIR into the run's blobs, in name
    order, and returns {name: blob id}. Anything else there (a directory, a
    symlink, a fifo) fails the run: only files become blobs."""
    out = {}
    try:
        names = sorted(os.listdir(OUTPUT_DIR))
    except FileNotFoundError:  # the code removed it
        return out
    if not names:
        return out
    import mimetypes
    import stat
    from runtime import log

    for name in names:
        path = os.path.join(OUTPUT_DIR, name)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise blobs.BlobError("%s is not a regular file: only files in %s become blobs" % (path, OUTPUT_DIR))
        kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
        out[name] = blobs._adopt(path, kind)
        log.info("%s is %s (%s)" % (path, out[name], kind))
    return out


def outputs_failure(exc):
    if isinstance(exc, blobs.BlobLimitError):
        return failure("OUTPUT_TOO_LARGE", "the output files are over the run's blob limits: " + text(exc), True)
    return failure(type(exc).__name__, text(exc))


def run(job):
    if job.get("language") == "bash":
        return run_bash(job)
    result = run_python(job)
    if not result["ok"]:
        return result
    try:
        collect_outputs()
    except BaseException as exc:
        return outputs_failure(exc)
    result["blobs"] = blobs._manifest()
    return result


def run_python(job):
    try:
        value = call(job)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included
        print_traceback(exc)
        if isinstance(exc, MemoryError):
            return failure("MEMORY_LIMIT_EXCEEDED", ("MemoryError: " + text(exc)).rstrip(": "), True)
        return failure(type(exc).__name__, text(exc))
    out, fail = encode(value)
    if fail is not None:
        return fail
    return {"ok": True, "output": out, "blobs": blobs._manifest()}


def warm_up():
    """Goes once through what a trivial job does, without its effects. In a
    process forked from the sandbox template, each part of the interpreter
    a job uses costs a copy of its pages at first use; done here, before
    the ready byte, those copies are out of the run's time."""
    job = json.loads('{"code": "def main(args):\\n    return {}\\n", "args": {}, "env": {}, '
                     '"inputs": [], "outputs": [], "skills": []}')
    scope = {"__name__": "job"}
    exec(compile(job["code"], CODE_NAME, "exec", dont_inherit=True), scope)
    out, _ = encode(scope["main"](job["args"]))
    json.dumps({"ok": True, "output": out, "blobs": []}, ensure_ascii=True).encode("ascii")
    types.ModuleType("job")
    resource.getrusage(resource.RUSAGE_SELF)
    resource.getrlimit(resource.RLIMIT_CPU)


def flush():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def main():
    os.set_inheritable(JOB_FD, False)
    os.set_inheritable(RESULT_FD, False)
    sys.stdout.reconfigure(line_buffering=True)
    dir_fd = blob_dir()
    os.write(RESULT_FD, b"R")
    job = read_job()
    try:
        prepare(job, dir_fd)
    except BaseException as exc:
        finish(failure("SANDBOX_ERROR", "preparing the run: " + text(exc), True))
    # From here on the job's code runs in this process and could write to
    # RESULT_FD itself: the gateway believes no set-up failure after "P".
    os.write(RESULT_FD, b"P")
    pid = os.getpid()
    result = run(job)
    if os.getpid() != pid:  # a forked child returning from the code does not answer
        os._exit(0)
    finish(result)


def finish(result):
    """Answer and exit. The logs are complete before the answer: stdout and
    stderr are flushed and closed first, so the gateway needs no more than
    the end of the log pipe once the sandbox's other processes are killed."""
    flush()
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    send(result)
    os._exit(0)


if __name__ == "__main__":
    main()
