#!/usr/bin/env bash
# Sets up a fresh machine for CursorBench: Debian packages (bubblewrap, git, chromium, faketime
# for validation's shifted-clock runs, gettext for humanize's tests, and as root docker.io for
# the docker sandbox backend),
# a virtual environment in .venv, and the project with its dev extras.
# Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v git >/dev/null 2>&1 || need_apt+=(git)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)  # the dashboard's browser tests (Playwright)
# libfaketime: task validation and `tasks health` run tests with the clock shifted
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need_apt+=(faketime)
# gettext: the translation tests of v1's humanize tasks run msgfmt, xgettext and msgmerge
command -v msgfmt >/dev/null 2>&1 || need_apt+=(gettext)
command -v make >/dev/null 2>&1 || need_apt+=(make)  # a v1 task's tests run its Makefile
# The docker sandbox backend: the harness starts its own engine (harness/sandbox/engine.py).
if [ "$(id -u)" = 0 ] || [ -n "${CI:-}" ]; then
  command -v dockerd >/dev/null 2>&1 || need_apt+=(docker.io)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else sudo="none"; fi
  if [ "$sudo" = none ]; then
    echo "warning: cannot install ${need_apt[*]} (not root, no sudo); agent commands will run UNCONFINED" >&2
  else
    echo "installing Debian packages: ${need_apt[*]}" >&2
    apt_install() {
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
    }
    if [ -z "$sudo" ]; then
      # As root (CI's fresh machine) while the Python environment below installs: nothing
      # there needs these packages (wheels only), and each takes about half a minute.
      apt_install &
      apt_pid=$!
    else
      apt_install  # sudo may ask for a password: not from the background
    fi
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.cursorbench-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  # setuptools explains editable installs in a wall of UserWarnings; keep set-up quiet
  PYTHONWARNINGS=ignore::UserWarning .venv/bin/python -m pip install -q -e '.[dev]'
  touch "$stamp"
fi
# training/ needs torch. Installed without its dependency on Jinja2, which only torch's code
# generation uses: the v1 suite builds tasks from Jinja2, and a copy in the environment the
# agent's sandbox sees would hand it the answers (the build's leak scan refuses it).
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  # Its other dependencies first: installed last, with --no-deps, torch is checked by no
  # later resolver run, so set-up prints no warning about the Jinja2 it goes without.
  .venv/bin/python -m pip install -q filelock fsspec networkx sympy typing-extensions \
    'setuptools>=77.0.3'
  .venv/bin/python -m pip install -q --no-deps torch==2.13.0
fi
if [ -n "${apt_pid:-}" ]; then
  wait "$apt_pid"  # a failed install fails set-up, as it did in the foreground
fi
