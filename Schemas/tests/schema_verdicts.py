"""Reads one JSON document per line from stdin and prints one verdict per line against the
job schema: "valid", or "invalid <path>: <message>" for the first error."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

SCHEMA = Path(__file__).resolve().parents[1] / "job.v1.schema.json"


def main() -> int:
    schema = json.loads(SCHEMA.read_text())
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as error:
            print(f"invalid : not JSON ({error.msg})")
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            first = errors[0]
            path = "/".join(map(str, first.absolute_path))
            print(f"invalid {path}: {first.message[:200]}".replace("\n", " "))
        else:
            print("valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
