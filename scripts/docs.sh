#!/usr/bin/env bash
# Builds the documentation site into site/ with `mkdocs build --strict` (any warning fails).
# The docs toolchain lives in its own environment, never in .venv, and outside the checkout:
# mkdocs needs Jinja2, and an agent's sandbox sees the checkout (its .venv lives there), so a
# Jinja2 there would hand it the answers of the v1 tasks built from Jinja2. The environment
# sits under ~/.cache/cursorbench, which every sandbox hides (harness/sandbox/bubblewrap.py:
# default_hidden_paths; the Docker image holds only .venv). mkdocstrings reads the sources
# statically, so it does not need the project installed. Extra options pass to `mkdocs build`;
# `--ensure` only builds the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CURSORBENCH_DOCS_VENV:-$HOME/.cache/cursorbench/docs-venv}
# shellcheck source=scripts/pinned_venv.sh
source scripts/pinned_venv.sh
ensure_pinned_venv python3 "$venv" docs/requirements.txt mkdocs
if [ "${1:-}" = --ensure ]; then exit 0; fi  # only build the environment
export NO_MKDOCS_2_WARNING=1  # the theme's notice about its successor, on every build
exec "$venv"/bin/mkdocs build --strict "$@"
