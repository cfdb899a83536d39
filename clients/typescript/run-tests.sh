#!/bin/sh
# Runs the TypeScript client's tests (node's built-in test runner) against a
# gateway binary: $SKILLGATE_BIN, by default ../../bin/skillgate from here.
# Needs only Node.js 18 or later, and the openssl CLI for the TLS tests.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${SKILLGATE_BIN:-$here/../../bin/skillgate}
if [ ! -x "$bin" ]; then
	echo "run-tests.sh: no gateway binary at $bin (run 'make build' or set SKILLGATE_BIN)" >&2
	exit 2
fi
SKILLGATE_BIN=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export SKILLGATE_BIN
cd "$here"
# Every test bounds its own waits; this is the last safety net for the run.
exec timeout --kill-after=10 1200 node --test test/*.test.js
