"""`pip install` of the package works offline and ships the typing marker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skillgate

PROJECT = Path(__file__).resolve().parents[1]


def test_pip_installs_offline_with_py_typed(tmp_path: Path) -> None:
    # A copy keeps setuptools' build/ and egg-info out of the source tree.
    src = tmp_path / "src-copy"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    site = tmp_path / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
           "--quiet", "--target", str(site), str(src)]  # fmt: skip
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)
    except subprocess.CalledProcessError as e:
        if "No module named pip" in e.stderr:
            pytest.skip("pip is not installed for this interpreter")
        raise AssertionError(e.stderr) from None
    assert (site / "skillgate" / "py.typed").is_file()
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = "import skillgate, sys; print(skillgate.__version__, skillgate.__file__)"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env, timeout=60)
    version, path = out.stdout.split()
    assert version == skillgate.__version__ and path.startswith(str(site))
