"""Structured logging: one JSON object per line on stderr.

Nothing secret is ever passed here: callers log at most the first 8 characters of a device
token (``short_token``) and never JWTs, access tokens or keys.
"""
from __future__ import annotations

import json
import sys
import time


def log(event: str, level: str = "info", **fields: object) -> None:
    """Write one log line. Failures to write (closed stderr at shutdown) are ignored."""
    record = {"ts": round(time.time(), 3), "level": level, "event": event}
    record.update(fields)
    try:
        sys.stderr.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def short_token(token: str | None) -> str | None:
    """The part of a device token that may appear in logs (first 8 characters)."""
    return None if token is None else token[:8]
