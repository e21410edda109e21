#!/usr/bin/env bash
# Sets up (if needed), then lints, type-checks, builds the docs and runs the whole test suite
# (slow tests included). Extra options pass to pytest, e.g. `bash scripts/test.sh -m "not slow"`
# (the quick tier).
#
# The suite runs in two phases (tests/conftest.py: CURSORBENCH_TEST_PHASE): most tests on
# CURSORBENCH_TEST_WORKERS pytest-xdist workers (default 3: on 2 cores many tests wait on
# sandboxes and subprocesses), then the tests of machine-wide resources (Docker, Ray, the red
# team's resource-limit attacks) alone. The type check and the docs build run beside the
# second phase, which leaves a core idle; their output is shown when they end. A phase that
# selects no test (exit 5) is fine when the other one ran some.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
workers=${CURSORBENCH_TEST_WORKERS:-3}
parallel=0
CURSORBENCH_TEST_PHASE=parallel .venv/bin/python -m pytest -n "$workers" "$@" || parallel=$?
static_log=$(mktemp)
(.venv/bin/mypy && bash scripts/docs.sh) >"$static_log" 2>&1 &
static_pid=$!
exclusive=0
CURSORBENCH_TEST_PHASE=exclusive .venv/bin/python -m pytest "$@" || exclusive=$?
static=0
wait "$static_pid" || static=$?
echo "--- type check (mypy) and docs build (mkdocs --strict) ---"
cat "$static_log"
rm -f "$static_log"
if [ "$static" != 0 ]; then exit "$static"; fi
if [ "$parallel" = 5 ] && [ "$exclusive" = 5 ]; then exit 5; fi
[ "$parallel" = 5 ] && parallel=0
[ "$exclusive" = 5 ] && exclusive=0
if [ "$parallel" != 0 ]; then exit "$parallel"; fi
exit "$exclusive"
