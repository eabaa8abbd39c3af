# Schemas/tests/schema-venv.sh — sourced: makes sure the private venv with the pinned
# requirements.txt exists in ${PUSHD_CACHE_DIR:-~/.cache/pushd}/schema-venv (installed only
# when that file changed) and sets $schema_venv to it.
here_venv=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
schema_venv="${PUSHD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pushd}/schema-venv"
mkdir -p "$(dirname "$schema_venv")"
exec 9>"$schema_venv.lock"
flock 9
if ! "$schema_venv/bin/python" -c 'import sys' 2>/dev/null; then
    rm -rf "$schema_venv"
    python3 -m venv "$schema_venv" >&2
fi
want=$(sha256sum "$here_venv/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$schema_venv/.stamp" 2>/dev/null)" != "$want" ]; then
    "$schema_venv/bin/python" -m pip install --disable-pip-version-check -q -r "$here_venv/requirements.txt" >&2
    echo "$want" > "$schema_venv/.stamp"
fi
exec 9>&-
