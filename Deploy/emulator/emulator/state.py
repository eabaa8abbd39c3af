"""Process-wide mutable state the services write to: counters, the push log and the per-token
attempt counters of ``fail_times`` rules.

``LocalState`` is the whole story for a single process. With ``--workers`` each worker gets a
``workers.WorkerState`` with the same methods that forwards pushes, attempt counts and
broadcast-channel lookups to the parent, so the services never know how many processes there are.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Protocol

from .channels import ChannelRegistry
from .config import Settings
from .logs import log, short_token
from .records import PushLog, PushRecord, Stats
from .rules import AttemptCounter


class ServiceState(Protocol):
    """What the services need from the process they run in."""

    settings: Settings

    def accept(self, service: str, build_record: Callable[[], PushRecord]) -> None: ...

    def next_attempt(self, key: str) -> "int | asyncio.Future[int]": ...

    def lookup_channel(self, bundle: str, channel_id: str) -> "dict | None | asyncio.Future[dict | None]":
        """The broadcast channel (``Channel.to_json()``), or None if it does not exist."""
        ...

    def outcome(self, service: str, status: int, reason: str, token: str | None) -> None: ...


class LocalState:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stats = Stats()
        self.log = PushLog(settings.max_records, None if settings.fast else settings.record_file)
        self.attempts = AttemptCounter()
        self.channels = ChannelRegistry(settings.max_channels)

    def accept(self, service: str, build_record: Callable[[], PushRecord]) -> None:
        """Called for every accepted push; ``--fast`` keeps counts only and never builds the
        record."""
        self.stats.accept(service)
        if not self.settings.fast:
            self.log.append(build_record().to_json_text())

    def next_attempt(self, key: str) -> "int | asyncio.Future[int]":
        return self.attempts.next_attempt(key)

    def lookup_channel(self, bundle: str, channel_id: str) -> dict | None:
        channel = self.channels.get(bundle, channel_id)
        return None if channel is None else channel.to_json()

    def outcome(self, service: str, status: int, reason: str, token: str | None) -> None:
        """Count one answered request (and log it with ``--log-requests``)."""
        self.stats.count(service, status, reason)
        if self.settings.log_requests:
            log("request", service=service, status=status, reason=reason or None,
                token=short_token(token))

    def reset(self) -> None:
        self.stats.reset()
        self.log.reset()
        self.attempts.reset()
        self.channels.reset()
