#!/usr/bin/env bash
# Sets up (if needed), then lints, type-checks, builds the docs and runs the whole test suite
# (slow tests included). Extra options pass to pytest, e.g. `bash scripts/test.sh -m "not slow"`
# (the quick tier).
#
# The suite runs in phases (tests/conftest.py: CURSORBENCH_TEST_PHASE): most tests on
# CURSORBENCH_TEST_WORKERS pytest-xdist workers (default 3: on 2 cores many tests wait on
# sandboxes and subprocesses) and, beside them in a process of their own, the tests of the
# Docker engine one at a time, its output shown when it ends; then the tests that need the
# machine to themselves (Ray clusters, the red team's resource-limit attacks, test_sources)
# alone. Both share one build cache. The type check and the docs build run beside the last
# phase, which leaves a core idle. A phase that selects no test
# (exit 5) is fine when another one ran some.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Harbor's environment (the interop tests use it) and the docs toolchain, each made in the
# background from the start: neither needs .venv, so they overlap set-up (mostly waiting
# on pip and apt) instead of taking CPU from the tests; a fresh Harbor one takes ~3 min.
bash scripts/harbor.sh --ensure >"$scratch/harbor-env.log" 2>&1 &
harbor_pid=$!
bash scripts/docs.sh --ensure >"$scratch/docs-env.log" 2>&1 &
docs_pid=$!
bash scripts/setup.sh
export CURSORBENCH_TEST_BUILD_CACHE="$scratch/build-cache"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
workers=${CURSORBENCH_TEST_WORKERS:-3}
CURSORBENCH_TEST_PHASE=resources .venv/bin/python -m pytest "$@" >"$scratch/resources.log" 2>&1 &
resources_pid=$!
parallel=0
# Whole files to a worker, the heaviest first (tests/heavy_first.py): the phase ends on short
# files, not on one worker still in test_rl_learns while the others have nothing left.
CURSORBENCH_TEST_PHASE=parallel .venv/bin/python -m pytest -n "$workers" \
    --dist loadfile --no-loadscope-reorder "$@" || parallel=$?
resources=0
wait "$resources_pid" || resources=$?
echo "--- tests of the Docker engine, run beside the others ---"
cat "$scratch/resources.log"
# A failed early build is only reported: what needs it builds it again or says why.
wait "$harbor_pid" || { echo "--- early build of Harbor's environment failed ---"; cat "$scratch/harbor-env.log"; }
wait "$docs_pid" || { echo "--- early build of the docs' environment failed ---"; cat "$scratch/docs-env.log"; }
(.venv/bin/mypy && bash scripts/docs.sh) >"$scratch/static.log" 2>&1 &
static_pid=$!
exclusive=0
CURSORBENCH_TEST_PHASE=exclusive .venv/bin/python -m pytest "$@" || exclusive=$?
static=0
wait "$static_pid" || static=$?
echo "--- type check (mypy) and docs build (mkdocs --strict) ---"
cat "$scratch/static.log"
if [ "$static" != 0 ]; then exit "$static"; fi
statuses=("$parallel" "$resources" "$exclusive")
if [ "${statuses[*]}" = "5 5 5" ]; then exit 5; fi
for status in "${statuses[@]}"; do
    if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
exit 0
