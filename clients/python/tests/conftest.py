"""Fixtures: real `skillgate serve` processes on loopback ephemeral ports.

The gateway binary comes from $SKILLGATE_BIN (default: bin/skillgate at the
repository root). Every process a test starts is killed and reaped when the
test ends, stopped or not; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, TypeVar

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent / "src"))

BINARY = Path(os.environ.get("SKILLGATE_BIN") or REPO / "bin" / "skillgate").resolve()
SKILLS_DIR = REPO / "examples" / "skills"
READY_TIMEOUT = 60.0  # start-up includes the sandbox's warm pool
TEST_TIMEOUT = 60.0  # the bound of every async test body

T = TypeVar("T")


def run(body: Callable[[], Awaitable[T]], timeout: float = TEST_TIMEOUT) -> T:
    """Run an async test body on a fresh loop, bounded in time."""

    async def bounded() -> T:
        return await asyncio.wait_for(body(), timeout)

    return asyncio.run(bounded())


def free_port() -> int:
    """A loopback port that was free a moment ago (for restarts on one port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """A running gateway and what its JSON log lines said."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.addrs: dict[str, tuple[str, int]] = {}
        self.records: list[dict[str, Any]] = []
        self.text: list[str] = []  # lines that are not JSON (start-up errors)
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_logs, daemon=True)
        self._reader.start()

    def _read_logs(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                self.text.append(line.decode(errors="replace").rstrip())
            else:
                self.records.append(rec)
                self._lines.put(rec)
        self._lines.put(None)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                rec = self._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError("the gateway did not become ready") from None
            if rec is None:
                raise AssertionError(f"the gateway exited during start-up: {self.text[-3:]} {self.records[-2:]}")
            if rec.get("message") == "listening":
                host, _, port = str(rec["addr"]).rpartition(":")
                self.addrs[str(rec["listener"])] = (host, int(port))
            if rec.get("message") == "skillgate ready":
                return

    def wait_record(self, message: str, timeout: float = 20.0, **fields: Any) -> dict[str, Any]:
        """Wait until the gateway has logged ``message`` with ``fields``;
        return that record.

        Log lines arrive through a pipe after the events they describe, so
        a test that checks one must wait for it (boundedly).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for rec in list(self.records):
                if rec.get("message") == message and all(rec.get(k) == v for k, v in fields.items()):
                    return rec
            time.sleep(0.02)
        raise AssertionError(f"the gateway did not log {message!r}")

    @property
    def tcp(self) -> tuple[str, int]:
        return self.addrs["tcp"]

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def freeze(self, timeout: float = 20.0) -> None:
        """SIGSTOP the gateway and wait until every thread has stopped.

        kill() returns before the group stop completes; a thread still
        running could answer one more request.
        """
        self.proc.send_signal(signal.SIGSTOP)
        tasks = Path(f"/proc/{self.proc.pid}/task")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [_task_state(t) for t in tasks.iterdir()]
            if states and all(st in ("T", "t") for st in states):
                return
            time.sleep(0.005)
        raise AssertionError("the gateway did not stop")

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process must not outlive its test
            self.proc.kill()
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)


def _task_state(task: Path) -> str:
    try:
        # The state follows the parenthesised command name, which may hold spaces.
        return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "T"  # the thread is gone


StartGateway = Callable[..., Gateway]


def spawn_gateway(data: Path, *args: str, listen: str = "127.0.0.1:0", workers: int = 0) -> Gateway:
    """Start `skillgate serve` with the example skills and wait until it is ready.

    Only the framed listener is on unless ``args`` add more; ``workers`` is
    the number of sandbox workers (0: no execution, the fastest start).
    """
    if not BINARY.is_file():
        raise AssertionError(f"no gateway binary at {BINARY}: build it or set SKILLGATE_BIN")
    cmd = [
        str(BINARY), "serve", "--listen", listen, "--http-listen", "", "--metrics-listen", "",
        "--skills-dir", str(SKILLS_DIR), "--data-dir", str(data), "--watch-skills=false",
        "--sandbox-workers", str(workers), "--sandbox-warm-pool", str(min(workers, 1)), *args,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    gw = Gateway(proc)
    try:
        gw.wait_ready()
    except BaseException:
        gw.stop()
        raise
    return gw


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[StartGateway]:
    """Start gateways for one test; all are killed when it ends."""
    started: list[Gateway] = []

    def start(*args: str, listen: str = "127.0.0.1:0", workers: int = 0) -> Gateway:
        gw = spawn_gateway(tmp_path / f"data{len(started)}", *args, listen=listen, workers=workers)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()


@pytest.fixture(scope="module")
def shared_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway with a sandbox worker, for tests that do not disturb it."""
    gw = spawn_gateway(tmp_path_factory.mktemp("shared"), workers=1)
    try:
        yield gw
    finally:
        gw.stop()
