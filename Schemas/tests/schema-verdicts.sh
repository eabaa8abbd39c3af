#!/usr/bin/env bash
# Schemas/tests/schema-verdicts.sh — one JSON document per input line in, one verdict per
# line out ("valid", or "invalid <path>: <message>"), against Schemas/job.v1.schema.json.
# Used by the Swift test that requires the schema and the worker's intake to agree
# (Tests/PushWorkerUnitTests/SchemaAgreementTests.swift). Same private venv as
# check-examples.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/schema-venv.sh"
exec "$schema_venv/bin/python" "$here/schema_verdicts.py"
