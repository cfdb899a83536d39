#!/usr/bin/env bash
# Runs the Python client's tests against a gateway binary; builds nothing.
#   SKILLGATE_BIN  the gateway (default: ../../bin/skillgate, i.e. `make build`'s)
#   PYTHON         the interpreter (default: Debian's /usr/bin/python3, which
#                  has python3-pytest; a pyenv `python3` on PATH may not)
# Extra arguments go to pytest, e.g. `run-tests.sh -k keepalive -x`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
SKILLGATE_BIN="$(realpath -m "${SKILLGATE_BIN:-$here/../../bin/skillgate}")"
PYTHON="${PYTHON:-/usr/bin/python3}"
export SKILLGATE_BIN PYTHONDONTWRITEBYTECODE=1
if [ ! -x "$SKILLGATE_BIN" ]; then
  echo "run-tests.sh: no gateway binary at $SKILLGATE_BIN (run 'make build' or set SKILLGATE_BIN)" >&2
  exit 2
fi
if ! "$PYTHON" -c 'import pytest' 2>/dev/null; then
  echo "run-tests.sh: $PYTHON has no pytest (apt-get install python3-pytest)" >&2
  exit 2
fi
cd "$here"
exec "$PYTHON" -m pytest -q "$@"
