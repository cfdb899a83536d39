"""A plain ``pip install`` of the package works offline with any Python >= 3.10
(the in-tree backend needs nothing from PyPI), and the wheel and sdist it
builds hold what they should."""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import skillgate

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "_build"))
import skillgate_build  # noqa: E402


def interpreters() -> list[str]:
    """This one, Debian's, the python3 on PATH (pyenv's, where there is one:
    it has no setuptools or wheel) and a pyenv 3.10, the oldest supported,
    where they exist; $SKILLGATE_TEST_PYTHONS (space-separated) adds more."""
    found = [sys.executable, "/usr/bin/python3", shutil.which("python3") or sys.executable]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found += sorted(glob.glob(f"{root}/versions/3.10.*/bin/python3"))[:1]
    found += os.environ.get("SKILLGATE_TEST_PYTHONS", "").split()
    seen, out = set(), []
    for py in found:
        real = os.path.realpath(py)
        if os.access(real, os.X_OK) and real not in seen:
            seen.add(real)
            out.append(py)
    return out


def clean_copy(tmp_path: Path) -> Path:
    # A copy, so that a build never writes into the source tree.
    src = tmp_path / "src-copy"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".mypy_cache"))
    return src


@pytest.mark.parametrize("python", interpreters())
def test_plain_pip_install_in_a_fresh_venv(python: str, tmp_path: Path) -> None:
    probe = subprocess.run([python, "-c", "import sys, ensurepip; print(sys.version_info >= (3, 10))"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot make a venv with pip (Debian: python3-venv)")
    if probe.stdout.strip() != "True":
        pytest.skip(f"{python} is older than 3.10")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=180)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    # No --no-build-isolation and no setuptools: nothing is to be fetched,
    # and --no-index makes any attempt fail instead of hang.
    cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--quiet", str(clean_copy(tmp_path))]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    code = "import skillgate, pathlib; p = pathlib.Path(skillgate.__file__).parent; print(skillgate.__version__, p, (p / 'py.typed').is_file())"
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True, capture_output=True, text=True, timeout=60, env=env)
    version, path, typed = out.stdout.split()
    assert version == skillgate.__version__ and path.startswith(str(venv)) and typed == "True"


def test_wheel_and_sdist_hold_the_package(tmp_path: Path) -> None:
    name = skillgate_build.build_wheel(str(tmp_path))
    assert name == f"skillgate_client-{skillgate.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / name) as whl:
        names = set(whl.namelist())
        dist_info = f"skillgate_client-{skillgate.__version__}.dist-info"
        assert {"skillgate/__init__.py", "skillgate/transfer.py", "skillgate/py.typed"} <= names
        assert {f"{dist_info}/{f}" for f in ("METADATA", "WHEEL", "RECORD", "LICENSE")} <= names
        assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
        record = whl.read(f"{dist_info}/RECORD").decode().splitlines()
        assert {line.split(",")[0] for line in record} == names, "RECORD lists every file"
        meta = whl.read(f"{dist_info}/METADATA").decode()
        assert "Project-URL: Repository, https://github.com/skillgate/skillgate" in meta
        assert "License: Apache-2.0" in meta and "Requires-Python: >=3.10" in meta
    again = tmp_path / "again"
    again.mkdir()
    skillgate_build.build_wheel(str(again))
    assert (again / name).read_bytes() == (tmp_path / name).read_bytes(), "the build is reproducible"

    sdist = skillgate_build.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / sdist) as tar:
        members = set(tar.getnames())
    base = f"skillgate_client-{skillgate.__version__}"
    for f in ("pyproject.toml", "README.md", "LICENSE", "PKG-INFO", "_build/skillgate_build.py", "src/skillgate/client.py"):
        assert f"{base}/{f}" in members


def test_the_packages_carry_the_repository_license() -> None:
    root = (PROJECT.parents[1] / "LICENSE").read_bytes()
    assert b"Apache License" in root and b"Version 2.0" in root
    for copy in (PROJECT / "LICENSE", PROJECT.parent / "typescript" / "LICENSE"):
        assert copy.read_bytes() == root, f"{copy} is a copy of the repository's LICENSE"


def test_the_backend_metadata_matches_pyproject() -> None:
    if importlib.util.find_spec("tomllib") is None:
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    assert project["name"] == skillgate_build.NAME
    assert project["version"] == skillgate_build.version() == skillgate.__version__
    assert project["description"] == skillgate_build.SUMMARY
    assert project["requires-python"] == skillgate_build.REQUIRES_PYTHON
    assert project["license"]["text"] == skillgate_build.LICENSE
    assert project["classifiers"] == skillgate_build.CLASSIFIERS
    assert project["urls"] == skillgate_build.URLS
    assert project["dependencies"] == []
