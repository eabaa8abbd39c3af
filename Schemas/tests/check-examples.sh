#!/usr/bin/env bash
# Schemas/tests/check-examples.sh — validate every example in Schemas/ against its schema
# (valid ones pass, invalid ones fail for exactly one reason). Uses a private venv in
# ${PUSHD_CACHE_DIR:-~/.cache/pushd}/schema-venv with the pinned requirements.txt, installed
# only when that file changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="${PUSHD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pushd}/schema-venv"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
fi
want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$want" ]; then
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$here/requirements.txt" >&2
    echo "$want" > "$venv/.stamp"
fi
exec 9>&-
exec "$venv/bin/python" "$here/check_examples.py"
