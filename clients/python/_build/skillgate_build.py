"""The package's PEP 517 build backend, in the tree and standard library only.

A backend from PyPI (setuptools, hatchling, flit-core) has to be downloaded
into pip's isolated build environment, or found in the interpreter's own
site-packages with ``--no-build-isolation``: offline, and with an
interpreter that lacks it (pyenv, conda, asdf), ``pip install`` fails
(``invalid command 'bdist_wheel'``). This package is pure Python files in
one directory, so writing its wheel and sdist takes a page of code and needs
nothing from outside. The metadata here must match the ``[project]`` table
of pyproject.toml; tests/test_packaging.py checks that it does.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path
from typing import IO, cast

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "skillgate"
NAME = "skillgate-client"
DIST = NAME.replace("-", "_")
SUMMARY = "asyncio client for skillgate's framed JSON-RPC transport (standard library only)"
REQUIRES_PYTHON = ">=3.10"
LICENSE = "Apache-2.0"
URLS = {
    "Homepage": "https://github.com/skillgate/skillgate",
    "Repository": "https://github.com/skillgate/skillgate",
    "Documentation": "https://github.com/skillgate/skillgate/blob/main/docs/clients.md",
    "Changelog": "https://github.com/skillgate/skillgate/blob/main/CHANGELOG.md",
}
CLASSIFIERS = [
    "Framework :: AsyncIO",
    "License :: OSI Approved :: Apache Software License",
    "Programming Language :: Python :: 3",
    "Typing :: Typed",
]
# Zip entries carry this time unless SOURCE_DATE_EPOCH says otherwise, so
# that two builds of one tree are the same bytes (1980 is zip's first year).
_EPOCH = 315532800

__all__ = [
    "build_wheel",
    "build_sdist",
    "build_editable",
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel",
    "prepare_metadata_for_build_editable",
]


def version() -> str:
    text = (ROOT / "src" / PACKAGE / "_version.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if m is None:
        raise RuntimeError("src/skillgate/_version.py has no __version__ line")
    return m.group(1)


def metadata() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version()}",
        f"Summary: {SUMMARY}",
        f"License: {LICENSE}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        *(f"Classifier: {c}" for c in CLASSIFIERS),
        *(f"Project-URL: {k}, {v}" for k, v in URLS.items()),
        "Description-Content-Type: text/markdown",
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + readme


def _timestamp() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)), _EPOCH)


def _sources() -> list[Path]:
    """The package's files: sources and the PEP 561 marker, no caches."""
    pkg = ROOT / "src" / PACKAGE
    return sorted(p for p in pkg.rglob("*") if p.is_file() and p.suffix in (".py", ".typed") and "__pycache__" not in p.parts)


class _Wheel:
    """A wheel being written: each file is recorded for RECORD."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._record: list[str] = []
        self._date = _zip_date(_timestamp())

    def add(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, self._date)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        self._record.append(f"{name},sha256={digest},{len(data)}")

    def close(self, dist_info: str) -> None:
        record = f"{dist_info}/RECORD"
        self._record.append(f"{record},,")
        info = zipfile.ZipInfo(record, self._date)
        info.external_attr = 0o644 << 16
        self._zip.writestr(info, "\n".join(self._record) + "\n")
        self._zip.close()


def _zip_date(ts: int) -> tuple[int, int, int, int, int, int]:
    t = time.gmtime(ts)
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def _dist_info_files(tag: str) -> dict[str, bytes]:
    wheel = f"Wheel-Version: 1.0\nGenerator: skillgate_build\nRoot-Is-Purelib: true\nTag: {tag}\n"
    return {
        "METADATA": metadata().encode("utf-8"),
        "WHEEL": wheel.encode("ascii"),
        "top_level.txt": f"{PACKAGE}\n".encode("ascii"),
        "LICENSE": _license(),
    }


def _license() -> bytes:
    # A copy of the repository's LICENSE: pip may build from a copy of
    # this directory alone.
    return (ROOT / "LICENSE").read_bytes()


def _write_wheel(wheel_directory: str, editable: bool) -> str:
    tag = "py3-none-any"
    dist_info = f"{DIST}-{version()}.dist-info"
    filename = f"{DIST}-{version()}-{tag}.whl"
    w = _Wheel(Path(wheel_directory) / filename)
    if editable:
        # PEP 660: a .pth line puts the source tree on sys.path.
        w.add(f"__editable__.{DIST}.pth", (str(ROOT / "src") + "\n").encode("utf-8"))
    else:
        for src in _sources():
            w.add(src.relative_to(ROOT / "src").as_posix(), src.read_bytes())
    for name, data in _dist_info_files(tag).items():
        w.add(f"{dist_info}/{name}", data)
    w.close(dist_info)
    return filename


def _write_metadata(metadata_directory: str) -> str:
    dist_info = Path(metadata_directory) / f"{DIST}-{version()}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    for name, data in _dist_info_files("py3-none-any").items():
        (dist_info / name).write_bytes(data)
    return dist_info.name


# ---- the PEP 517 and PEP 660 hooks ---------------------------------------


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: object = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: object = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: object = None) -> str:
    return _write_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: object = None) -> str:
    return _write_metadata(metadata_directory)


def build_wheel(
    wheel_directory: str, config_settings: object = None, metadata_directory: str | None = None
) -> str:
    return _write_wheel(wheel_directory, editable=False)


def build_editable(
    wheel_directory: str, config_settings: object = None, metadata_directory: str | None = None
) -> str:
    return _write_wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory: str, config_settings: object = None) -> str:
    base = f"{DIST}-{version()}"
    filename = f"{base}.tar.gz"
    files = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "LICENSE", Path(__file__).resolve(), *_sources()]
    ts = _timestamp()

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(f"{base}/{name}")
        info.size, info.mtime, info.mode = len(data), ts, 0o644
        tar.addfile(info, io.BytesIO(data))

    with open(Path(sdist_directory) / filename, "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=ts) as gz:
            # GzipFile is a binary file; older typeshed stubs do not say so.
            with tarfile.open(fileobj=cast(IO[bytes], gz), mode="w", format=tarfile.PAX_FORMAT) as tar:
                for f in files:
                    add(tar, f.relative_to(ROOT).as_posix(), f.read_bytes())
                add(tar, "PKG-INFO", metadata().encode("utf-8"))
    return filename
