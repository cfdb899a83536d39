"""The README's first example runs as written against the gateway."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import Gateway

PROJECT = Path(__file__).resolve().parents[1]


def test_readme_example_runs(shared_gateway: Gateway) -> None:
    readme = (PROJECT / "README.md").read_text()
    match = re.search(r"```python\n(.*?)```", readme, re.S)
    assert match, "the README has no python example"
    example = match.group(1)
    assert len(example.strip().splitlines()) <= 12, "the first example stays short"
    host, port = shared_gateway.tcp
    code = example.replace('"127.0.0.1", 7400', f'"{host}", {port}').replace('token="sgt_..."', "token=None")
    env = {**os.environ, "PYTHONPATH": str(PROJECT / "src")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "acme.math.add" in out.stdout and "completed {'sum': 5, 'count': 2}" in out.stdout
