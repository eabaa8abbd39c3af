"""Validate every example in Schemas/ against its JSON Schema: each valid example must pass,
each example under invalid/ must fail for exactly one reason (so that a decoder test in any
language that uses it checks that one rule and nothing else by accident)."""
from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[1]
CASES = [("job.v1.schema.json", "examples/*.json", "examples/invalid/*.json"),
         ("events/token.invalid.v1.schema.json", "events/examples/token.invalid.*.json",
          "events/examples/invalid/token.invalid.*.json"),
         ("events/job.completed.v1.schema.json", "events/examples/job.completed.*.json",
          "events/examples/invalid/job.completed.*.json")]


def main() -> int:
    failures: list[str] = []
    checked = 0
    for schema_file, valid, invalid in CASES:
        schema = json.loads((SCHEMAS / schema_file).read_text())
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        for path in sorted(glob.glob(str(SCHEMAS / valid))):
            checked += 1
            errors = [e.message for e in validator.iter_errors(json.loads(Path(path).read_text()))]
            if errors:
                failures.append(f"{path}: should be valid: {errors}")
        for path in sorted(glob.glob(str(SCHEMAS / invalid))):
            checked += 1
            errors = list(validator.iter_errors(json.loads(Path(path).read_text())))
            # Two messages from one `pattern` + `format` pair are one reason (timestamps).
            reasons = {"/".join(map(str, e.absolute_path)) for e in errors}
            if len(reasons) != 1:
                failures.append(f"{path}: should fail for exactly one reason, got {[e.message[:120] for e in errors]}")
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"Schemas examples: {checked} checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
