#!/usr/bin/env bash
# Sets up (if needed), then scores the bundled tasks. With no options this runs the
# embedded reference solver: no network, no key. Options pass to `cursorbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/cursorbench run "$@"
