#!/usr/bin/env bash
# Runs Harbor's own CLI (`harbor ...`) or, with `--python`, its Python, from a pinned
# environment of its own. Like scripts/docs.sh: never in .venv and outside the checkout,
# because Harbor pulls in Jinja2 and other packages the v1 tasks are built from, and an
# agent's sandbox sees the checkout. ~/.cache/cursorbench is hidden from every sandbox
# (harness/sandbox/bubblewrap.py: default_hidden_paths). Harbor needs Python 3.12; the
# environment is rebuilt when scripts/harbor-requirements.txt changes. `--ensure` only
# builds it and prints its path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/scripts/harbor-requirements.txt"
venv=${CURSORBENCH_HARBOR_VENV:-$HOME/.cache/cursorbench/harbor-venv}
python=${CURSORBENCH_HARBOR_PYTHON:-}
if [ -z "$python" ]; then
    for candidate in python3.12 /root/.pyenv/versions/3.12*/bin/python; do
        if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
            python=$candidate; break
        fi
    done
fi
# shellcheck source=scripts/pinned_venv.sh
source "$root/scripts/pinned_venv.sh"
if ! pinned_venv_built "$venv" "$req" harbor; then
    [ -n "$python" ] || { echo "harbor.sh: Python 3.12 not found (set CURSORBENCH_HARBOR_PYTHON)" >&2; exit 2; }
    ensure_pinned_venv "$python" "$venv" "$req" harbor
fi
case "${1:-}" in
    --ensure) echo "$venv"; exit 0 ;;
    --python) shift; exec "$venv"/bin/python "$@" ;;
    *) exec "$venv"/bin/harbor "$@" ;;
esac
