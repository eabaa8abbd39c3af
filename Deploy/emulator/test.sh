#!/usr/bin/env bash
# Run the emulator's test suite (for CI too): the same venv as run.sh plus the pinned test
# dependencies. Arguments go to pytest.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/venv.sh"
ensure_venv "$here/requirements.txt" "$here/requirements-test.txt"
cd "$here"
exec "$EMULATOR_VENV/bin/python" -m pytest -q tests "$@"
