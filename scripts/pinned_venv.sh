# Sourced by scripts/harbor.sh and scripts/docs.sh: a tool's environment of its own, pinned by
# a requirements file, outside .venv and the checkout.
#
# ensure_pinned_venv PYTHON VENV REQUIREMENTS PROGRAM builds VENV from REQUIREMENTS with
# PYTHON unless VENV/bin/PROGRAM exists and VENV holds a copy of the same REQUIREMENTS.
# One builder at a time (scripts/test.sh builds both early while the test suite's workers may
# ask too): whoever waited on the lock finds it built. pip's output goes to stderr.
ensure_pinned_venv() {
    local python=$1 venv=$2 req=$3 program=$4
    pinned_venv_built "$venv" "$req" "$program" && return 0
    mkdir -p "$(dirname "$venv")"
    exec 9>"$venv.lock"
    flock 9
    if ! pinned_venv_built "$venv" "$req" "$program"; then
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv"/bin/python -m pip install --quiet --disable-pip-version-check --no-cache-dir \
            -r "$req" >&2
        cp "$req" "$venv"/requirements.txt
    fi
    flock -u 9
}

pinned_venv_built() {
    [ -x "$1/bin/$3" ] && cmp -s "$2" "$1"/requirements.txt
}
