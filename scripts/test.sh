#!/usr/bin/env bash
# Sets up (if needed), then lints and runs the whole test suite (slow tests included).
# Extra options pass to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest "$@"
