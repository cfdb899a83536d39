"""The package, its build backend and its tests pass `mypy --strict` (PEP 561
users rely on it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]


def test_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (Debian: python3-mypy)")
    env = {**os.environ, "MYPYPATH": f"{PROJECT / 'src'}:{PROJECT / 'tests'}:{PROJECT / '_build'}"}
    cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "src", "tests", "_build"]
    out = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
