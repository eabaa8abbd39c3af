#!/usr/bin/env bash
# Schemas/tests/check-examples.sh — validate every example in Schemas/ against its schema
# (valid ones pass, invalid ones fail for exactly one reason). Uses a private venv in
# ${PUSHD_CACHE_DIR:-~/.cache/pushd}/schema-venv with the pinned requirements.txt, installed
# only when that file changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/schema-venv.sh"
exec "$schema_venv/bin/python" "$here/check_examples.py"
