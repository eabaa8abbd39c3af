#!/usr/bin/env bash
# Start the local APNs + FCM + OAuth2 emulator in the foreground; arguments go to
# `python -m emulator` (see README.md). The venv lives in
# ${PUSHD_CACHE_DIR:-~/.cache/pushd}/emulator-venv and is (re)installed from requirements.txt
# only when that file changed. The first stdout line is the emulator's JSON start line.
#
#   run.sh [emulator flags...]          start the emulator
#   run.sh make-credentials [flags...]  run make_credentials.py with the venv's Python
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/venv.sh"
ensure_venv "$here/requirements.txt"
cd "$here"
if [ "${1:-}" = make-credentials ]; then
    shift
    exec "$EMULATOR_VENV/bin/python" make_credentials.py "$@"
fi
exec "$EMULATOR_VENV/bin/python" -m emulator "$@"
