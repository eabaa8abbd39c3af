"""What the emulator remembers: accepted pushes (for assertions) and counters (for /stats).

Both are bounded: the push log is a ring of ``--max-records`` entries whose sequence numbers
keep increasing, so a poller using ``since`` notices when it fell behind (``dropped``).
"""
from __future__ import annotations

import itertools
import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable


#: ``json.dumps`` with any option builds a new encoder per call; a record is encoded per push.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


@dataclass(slots=True)
class PushRecord:
    service: str
    token: str | None
    headers: dict[str, str]
    body: str
    received_at: float
    extra: dict = field(default_factory=dict)

    def to_json_text(self) -> str:
        """The stored form: compact JSON without ``seq`` (the log assigns it)."""
        return _COMPACT.encode({"service": self.service, "token": self.token, "headers": self.headers,
                                "body": self.body, "received_at": round(self.received_at, 6), **self.extra})


class PushLog:
    """Accepted pushes as serialized JSON text: about a third of the memory of live objects, and
    worker processes can hand records over without the parent parsing them."""

    def __init__(self, max_records: int, record_file: Path | None) -> None:
        self._records: deque[tuple[int, str]] = deque(maxlen=max(1, max_records))
        self._last_seq = 0
        self._file: IO[str] | None = record_file.open("a", encoding="utf-8") if record_file else None

    def append(self, record_json: str) -> None:
        """``record_json`` is ``PushRecord.to_json_text()`` output."""
        self._last_seq += 1
        self._records.append((self._last_seq, record_json))
        if self._file is not None:
            self._file.write(f'{{"seq":{self._last_seq},{record_json[1:]}\n')
            self._file.flush()

    def since(self, seq: int, limit: int) -> dict:
        """Records with a sequence number above ``seq``, oldest first, at most ``limit``.
        ``dropped`` counts records after ``seq`` that are no longer held (ring overflow or reset):
        sequence numbers never restart, so pollers can keep their cursor across a reset."""
        first = self._records[0][0] if self._records else self._last_seq + 1
        start = max(0, seq + 1 - first)
        page = [{"seq": number, **json.loads(text)}
                for number, text in itertools.islice(self._records, start, start + limit)]
        return {"pushes": page,
                "next_since": page[-1]["seq"] if page else max(seq, first - 1),
                "last_seq": self._last_seq,
                "dropped": max(0, first - 1 - seq)}

    def reset(self) -> None:
        self._records.clear()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Stats:
    """Request counters keyed by (service, status, reason); ``accepted`` counts recorded pushes."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int, str], int] = {}
        self.accepted: dict[str, int] = {}

    def count(self, service: str, status: int, reason: str = "") -> None:
        key = (service, status, reason)
        self.counts[key] = self.counts.get(key, 0) + 1

    def accept(self, service: str) -> None:
        self.accepted[service] = self.accepted.get(service, 0) + 1

    def reset(self) -> None:
        self.counts.clear()
        self.accepted.clear()

    def snapshot(self) -> dict:
        """A JSON-able form that ``report`` can add up across worker processes, with the CPU
        time of the process taking it (benchmarks divide the emulator's CPU by its pushes)."""
        return {"counts": [[s, st, r, n] for (s, st, r), n in self.counts.items()],
                "accepted": dict(self.accepted), "cpu_seconds": time.process_time()}

    @staticmethod
    def report(snapshots: Iterable[dict]) -> dict:
        by_service: dict[str, dict] = {}
        by_status: dict[str, int] = {}
        by_reason: dict[str, int] = {}
        total = accepted_total = 0
        cpu_seconds = 0.0
        for snap in snapshots:
            cpu_seconds += snap.get("cpu_seconds", 0.0)
            for service, status, reason, n in snap["counts"]:
                entry = by_service.setdefault(
                    service, {"requests": 0, "accepted": 0, "by_status": {}, "by_reason": {}})
                entry["requests"] += n
                entry["by_status"][str(status)] = entry["by_status"].get(str(status), 0) + n
                by_status[str(status)] = by_status.get(str(status), 0) + n
                if reason:
                    entry["by_reason"][reason] = entry["by_reason"].get(reason, 0) + n
                    by_reason[reason] = by_reason.get(reason, 0) + n
                total += n
            for service, n in snap["accepted"].items():
                by_service.setdefault(
                    service, {"requests": 0, "accepted": 0, "by_status": {}, "by_reason": {}})
                by_service[service]["accepted"] += n
                accepted_total += n
        return {"total_requests": total, "total_accepted": accepted_total, "by_service": by_service,
                "by_status": by_status, "by_reason": by_reason, "cpu_seconds": round(cpu_seconds, 3)}
