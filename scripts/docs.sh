#!/usr/bin/env bash
# Builds the documentation site into site/ with `mkdocs build --strict` (any warning fails).
# The docs toolchain lives in its own environment, .venv-docs, never in .venv: mkdocs needs
# Jinja2, and a Jinja2 in the project's environment would hand the agent the answers of the
# v1 tasks built from Jinja2. mkdocstrings reads the sources statically, so .venv-docs does
# not need the project installed. Extra options pass to `mkdocs build`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-docs/bin/mkdocs ] || ! cmp -s docs/requirements.txt .venv-docs/requirements.txt; then
    python3 -m venv .venv-docs
    .venv-docs/bin/python -m pip install --quiet --disable-pip-version-check --no-cache-dir \
        -r docs/requirements.txt
    cp docs/requirements.txt .venv-docs/requirements.txt
fi
export NO_MKDOCS_2_WARNING=1  # the theme's notice about its successor, on every build
exec .venv-docs/bin/mkdocs build --strict "$@"
