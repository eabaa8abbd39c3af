"""The admin API: plain HTTP/1.1 + JSON on 127.0.0.1, for tests and load-test harnesses.

``GET /health``, ``GET /pushes?since=N&limit=M``, ``GET /stats``, ``GET /channels``,
``POST /reset`` and ``POST /revoke-tokens``. It talks to a backend: the process's own state, or with
``--workers`` the parent's view that first synchronises with every worker, so an answer
always includes every push whose 200 a client has already received.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from .logs import log
from .oauth import AccessTokens
from .records import Stats
from .state import LocalState

DEFAULT_PAGE = 10_000
MAX_PAGE = 100_000
MAX_ADMIN_BODY = 64 * 1024


class AdminBackend(Protocol):
    async def pushes(self, since: int, limit: int) -> dict: ...
    async def stats(self) -> dict: ...
    async def channels(self) -> list[dict]: ...
    async def reset(self) -> None: ...
    async def revoke_tokens(self) -> None: ...


class LocalBackend:
    """Single-process mode: answer from this process's state."""

    def __init__(self, state: LocalState, tokens: AccessTokens) -> None:
        self._state, self._tokens = state, tokens

    async def pushes(self, since: int, limit: int) -> dict:
        page = self._state.log.since(since, limit)
        page["recording"] = "counts-only" if self._state.settings.fast else "full"
        return page

    async def stats(self) -> dict:
        return Stats.report([self._state.stats.snapshot()])

    async def channels(self) -> list[dict]:
        return self._state.channels.all()

    async def reset(self) -> None:
        self._state.reset()

    async def revoke_tokens(self) -> None:
        self._tokens.rotate()


class AdminServer:
    def __init__(self, backend: AdminBackend, started_at: float) -> None:
        self._backend = backend
        self._started_at = started_at

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line.strip():
                    break
                method, target, version = request_line.decode("latin-1").split()
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if length > MAX_ADMIN_BODY:
                    raise ValueError("admin request body too large")
                if length:
                    await reader.readexactly(length)
                status, payload = await self._route(method, target)
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                body = json.dumps(payload, separators=(",", ":")).encode() + b"\n"
                writer.write(
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(body)}\r\nconnection: {'keep-alive' if keep_alive else 'close'}"
                    f"\r\n\r\n".encode() + body)
                await writer.drain()
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    async def _route(self, method: str, target: str) -> tuple[int, object]:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        routes = {("GET", "/health"), ("GET", "/pushes"), ("GET", "/stats"), ("GET", "/channels"),
                  ("POST", "/reset"), ("POST", "/revoke-tokens")}
        if (method, parts.path) not in routes:
            known = any(path == parts.path for _, path in routes)
            return (405, {"error": "method not allowed"}) if known else (404, {"error": "not found"})
        try:
            if parts.path == "/health":
                return 200, {"status": "ok", "pid": os.getpid(),
                             "uptime_s": round(time.time() - self._started_at, 3)}
            if parts.path == "/pushes":
                since = int(query.get("since", "0"))
                limit = max(1, min(int(query.get("limit", str(DEFAULT_PAGE))), MAX_PAGE))
                return 200, await self._backend.pushes(since, limit)
            if parts.path == "/stats":
                return 200, await self._backend.stats()
            if parts.path == "/channels":
                return 200, {"channels": await self._backend.channels()}
            if parts.path == "/reset":
                await self._backend.reset()
                log("reset")
                return 200, {"reset": True}
            await self._backend.revoke_tokens()
            log("access_tokens_revoked")
            return 200, {"revoked": True}
        except ValueError as error:
            return 400, {"error": str(error)}


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
