#!/usr/bin/env bash
# Sets up (if needed), then lints, type-checks, builds the docs and runs the whole test suite
# (slow tests included). Extra options pass to pytest, e.g. `bash scripts/test.sh -m "not slow"`
# (the quick tier).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
bash scripts/docs.sh
exec .venv/bin/python -m pytest "$@"
