"""`pip install` of the package works offline and ships the typing marker."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skillgate

PROJECT = Path(__file__).resolve().parents[1]


def test_pip_installs_offline_with_py_typed(tmp_path: Path) -> None:
    # find_spec, not import: importing setuptools here would disturb distutils.
    for module, package in (("pip", "python3-pip"), ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module} (Debian: {package})")
    # A copy keeps setuptools' build/ and egg-info out of the source tree.
    src = tmp_path / "src-copy"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    site = tmp_path / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
           "--quiet", "--target", str(site), str(src)]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (site / "skillgate" / "py.typed").is_file()
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = "import skillgate, sys; print(skillgate.__version__, skillgate.__file__)"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env, timeout=60)
    version, path = out.stdout.split()
    assert version == skillgate.__version__ and path.startswith(str(site))
