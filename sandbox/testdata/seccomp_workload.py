"""What a run's code does, for the seccomp allow-list: the Python runtime's
own facilities, /bin/bash and coreutils, and the real libraries skills use.
As a script it prints one line per check, "name ok" or "name FAIL: why"
(arguments name checks to skip); as a run's code, main returns them."""

import os
import sys
import tempfile
import traceback

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def threads():
    import concurrent.futures
    import threading

    ev = threading.Event()
    assert not ev.wait(0.01)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert sum(ex.map(lambda x: x * x, range(100))) == 328350
    lock = threading.Condition()
    with lock:
        lock.wait(0.01)


@check
def subprocess_and_fork():
    import subprocess

    out = subprocess.run(["/bin/echo", "hi"], capture_output=True, check=True).stdout
    assert out == b"hi\n", out
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, b"child")
        os.execv("/bin/true", ["true"])
    os.close(w)
    assert os.read(r, 10) == b"child"
    os.close(r)
    os.waitpid(pid, 0)
    pid = os.posix_spawn("/bin/true", ["true"], os.environ)
    os.waitpid(pid, 0)


@check
def multiprocessing_():
    import multiprocessing

    for method in ("fork", "spawn", "forkserver"):
        ctx = multiprocessing.get_context(method)
        with ctx.Pool(2) as pool:
            # A builtin: the workers of spawn and forkserver import what they run.
            assert pool.map(abs, range(-5, 5)) == [abs(x) for x in range(-5, 5)], method
    q = multiprocessing.Queue()
    q.put(1)
    assert q.get(timeout=5) == 1
    v = multiprocessing.Value("i", 3)
    with v.get_lock():
        v.value += 1
    from multiprocessing import shared_memory

    shm = shared_memory.SharedMemory(create=True, size=4096)
    shm.buf[0] = 1
    shm.close()
    shm.unlink()


@check
def asyncio_():
    import asyncio

    async def main():
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0.001)
        r = await loop.run_in_executor(None, sum, [1, 2, 3])
        proc = await asyncio.create_subprocess_exec("/bin/echo", "x", stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        srv = await asyncio.start_unix_server(lambda r, w: w.close(), path=os.path.join(TMP, "sock"))
        reader, writer = await asyncio.open_unix_connection(os.path.join(TMP, "sock"))
        writer.close()
        srv.close()
        await srv.wait_closed()
        return r, out

    assert asyncio.run(main()) == (6, b"x\n")


@check
def sqlite3_():
    import sqlite3

    for path in (":memory:", os.path.join(TMP, "db.sqlite")):
        con = sqlite3.connect(path)
        con.execute("pragma journal_mode=wal")
        con.execute("create table t (k integer primary key, v text)")
        con.executemany("insert into t values (?, ?)", [(i, str(i)) for i in range(1000)])
        con.commit()
        assert con.execute("select count(*) from t").fetchone() == (1000,)
        con.close()


@check
def ssl_hashlib():
    import hashlib
    import hmac
    import secrets
    import ssl

    ctx = ssl.create_default_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert hashlib.sha256(b"x").hexdigest().startswith("2d711642")
    hashlib.pbkdf2_hmac("sha256", b"pw", b"salt", 1000)
    hmac.new(b"k", b"m", "sha512").digest()
    secrets.token_bytes(32)


@check
def mmap_():
    import mmap

    m = mmap.mmap(-1, 1 << 20)
    m[:5] = b"hello"
    m.close()
    path = os.path.join(TMP, "mm")
    with open(path, "wb") as f:
        f.write(b"\0" * 8192)
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        m[0:3] = b"abc"
        m.flush()
        m.close()


@check
def select_poll_epoll():
    import select
    import selectors
    import socket

    a, b = socket.socketpair()
    b.send(b"x")
    assert select.select([a], [], [], 1)[0] == [a]
    p = select.poll()
    p.register(a, select.POLLIN)
    assert p.poll(1000)
    e = select.epoll()
    e.register(a, select.EPOLLIN)
    assert e.poll(1)
    e.close()
    with selectors.DefaultSelector() as s:
        s.register(a, selectors.EVENT_READ)
        assert s.select(1)
    a.close()
    b.close()


@check
def signals_timers():
    import signal
    import time

    got = []
    signal.signal(signal.SIGALRM, lambda *a: got.append("alrm"))
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.005)
    assert got == ["alrm"], got
    signal.signal(signal.SIGUSR1, lambda *a: got.append("usr1"))
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.pthread_kill(__import__("threading").get_ident(), signal.SIGUSR1)
    assert got.count("usr1") == 2, got
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
    os.kill(os.getpid(), signal.SIGUSR2)
    assert signal.sigtimedwait([signal.SIGUSR2], 1).si_signo == signal.SIGUSR2
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR2])
    time.sleep(0.001)
    time.process_time(), time.thread_time(), time.clock_gettime(time.CLOCK_BOOTTIME)
    os.times()
    __import__("resource").getrusage(0)


@check
def random_affinity():
    assert len(os.urandom(16)) == 16
    assert len(os.getrandom(16)) == 16
    assert os.sched_getaffinity(0)
    assert os.cpu_count() >= 1
    os.sched_yield()
    __import__("random").SystemRandom().random()


@check
def files():
    import shutil
    import zipfile

    d = os.path.join(TMP, "files")
    os.makedirs(os.path.join(d, "a", "b"))
    p = os.path.join(d, "a", "f.txt")
    with open(p, "w") as f:
        f.write("x" * 100000)
        f.flush()
        os.fsync(f.fileno())
    shutil.copy(p, p + ".copy")
    shutil.copytree(os.path.join(d, "a"), os.path.join(d, "c"))
    os.rename(p + ".copy", p + ".moved")
    os.symlink(p, p + ".link")
    os.link(p, p + ".hard")
    os.chmod(p, 0o600)
    os.utime(p, (1, 1))
    os.truncate(p, 10)
    os.statvfs(d)
    assert sorted(e.name for e in os.scandir(os.path.join(d, "a"))) == ["b", "f.txt", "f.txt.hard", "f.txt.link", "f.txt.moved"]
    with zipfile.ZipFile(os.path.join(d, "z.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x", "y" * 1000)
    fd = os.open(p, os.O_RDWR)
    os.pwrite(fd, b"ab", 3)
    assert os.pread(fd, 2, 3) == b"ab"
    os.lseek(fd, 0, os.SEEK_SET)
    os.close(fd)
    with tempfile.TemporaryDirectory(dir=d) as t:
        open(os.path.join(t, "x"), "w").close()
    shutil.rmtree(d)


@check
def bash_coreutils():
    import subprocess

    script = r"""
set -e
set +m
cd "$1"
printf 'b\na\nc\na\n' > in.txt
sort in.txt | uniq -c | sort -rn | head -n 1 > top.txt
read -r n w < top.txt
[ "$n" = 2 ] && [ "$w" = a ]
( cd / && pwd ) > sub.txt
[ "$(cat sub.txt)" = / ]
{ echo out; echo err >&2; } > both.txt 2>&1
[ "$(wc -l < both.txt)" -eq 2 ]
sleep 0.01 & sleep 0.01 & wait
cat <<< here | tr a-z A-Z | grep -q HERE
mkdir -p d/e && cp in.txt d/e/ && mv d/e/in.txt d/e/moved.txt && ls -la d/e > /dev/null
ln -s moved.txt d/e/link && readlink d/e/link > /dev/null && stat d/e/moved.txt > /dev/null
chmod 600 d/e/moved.txt && touch -d '2000-01-01' d/e/moved.txt && du -s d > /dev/null && df . > /dev/null
find d -type f | xargs -r cat | sed 's/a/A/' | grep -c A > /dev/null
cut -c1 in.txt | wc -c > /dev/null; date > /dev/null; id > /dev/null; env > /dev/null; nproc > /dev/null; uname -a > /dev/null
seq 1 1000 | sha256sum > /dev/null; head -c 1000 /dev/urandom | base64 > /dev/null
tar -cf t.tar d && gzip t.tar && gzip -d t.tar.gz && tar -tf t.tar > /dev/null
timeout 5 true; nice -n 1 true; ps > /dev/null 2>&1 || true
rm -rf d in.txt top.txt sub.txt both.txt t.tar
echo done
"""
    out = subprocess.run(["/bin/bash", "-c", script, "bash", TMP], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "done\n", (out.returncode, out.stdout, out.stderr)


@check
def numpy_():
    import numpy as np

    a = np.arange(400 * 400, dtype=np.float64).reshape(400, 400) / 1e5
    b = a @ a.T
    assert b.shape == (400, 400)
    np.linalg.inv(np.eye(50) * 2)
    np.fft.fft(np.ones(1024))
    np.random.default_rng(1).normal(size=1000).mean()


@check
def pandas_():
    import pandas as pd

    df = pd.DataFrame({"k": ["a", "b", "a", "c"] * 250, "v": range(1000)})
    g = df.groupby("k")["v"].sum()
    assert g["a"] == sum(range(0, 1000, 4)) + sum(range(2, 1000, 4))
    p = os.path.join(TMP, "df.csv")
    df.to_csv(p, index=False)
    assert len(pd.read_csv(p)) == 1000
    pd.date_range("2024-01-01", periods=10, freq="D").tz_localize("UTC")


@check
def matplotlib_():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2], label="line")
    ax.set_title("title")
    ax.legend()
    p = os.path.join(TMP, "plot.png")
    fig.savefig(p)
    plt.close(fig)
    with open(p, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@check
def lxml_():
    from lxml import etree, html

    root = etree.fromstring(b"<r><a x='1'>t</a><a x='2'/></r>")
    assert root.xpath("count(//a)") == 2
    assert html.fromstring("<p>hi <b>there</b></p>").text_content() == "hi there"
    etree.tostring(root, pretty_print=True)


@check
def openpyxl_():
    import openpyxl

    p = os.path.join(TMP, "book.xlsx")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["k", "v"])
    for i in range(100):
        ws.append([i, i * i])
    wb.save(p)
    wb = openpyxl.load_workbook(p)
    assert wb.active.cell(row=101, column=2).value == 99 * 99


@check
def docx_():
    import docx

    p = os.path.join(TMP, "doc.docx")
    d = docx.Document()
    d.add_heading("Title", 0)
    d.add_paragraph("body")
    d.add_table(rows=2, cols=2)
    d.save(p)
    assert docx.Document(p).paragraphs[1].text == "body"


@check
def reportlab_():
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    p = os.path.join(TMP, "doc.pdf")
    c = canvas.Canvas(p, pagesize=A4)
    c.drawString(72, 720, "hello")
    c.showPage()
    c.save()
    with open(p, "rb") as f:
        assert f.read(5) == b"%PDF-"


def run_checks(skip=()):
    """Every check not in skip: {name: "ok" or "FAIL: why"}."""
    global TMP
    TMP = tempfile.mkdtemp()
    out = {}
    try:
        for fn in CHECKS:
            name = fn.__name__.rstrip("_")
            if name in skip:
                continue
            try:
                fn()
                out[name] = "ok"
            except BaseException as e:  # noqa: BLE001: every failure is reported
                out[name] = "FAIL: " + "".join(traceback.format_exception_only(type(e), e)).strip()
    finally:
        __import__("shutil").rmtree(TMP, ignore_errors=True)
    return out


def main(args):
    """The entrypoint of a run: the checks but args["skip"]."""
    return run_checks(args.get("skip", ()))


if __name__ == "__main__":
    # The seccomp mode, 2 under a filter: the caller checks which it ran.
    with open("/proc/self/status") as f:
        print("seccomp", dict(line.split(":\t", 1) for line in f)["Seccomp"].strip(), flush=True)
    for name, result in run_checks(sys.argv[1:]).items():
        print(name, result.replace("\n", " | "), flush=True)
