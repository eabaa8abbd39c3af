"""The parent/worker channel of ``--workers``: a Unix socketpair carrying one message per
line, tagged by its first byte: ``P`` + arrival time + an accepted push's JSON (passed on as
bytes, never parsed) or ``M`` + a JSON message. Messages with an ``id`` expect a ``reply``
with the same ``id``; the channel is FIFO, which the parent relies on (see workers.py).

Lines are written once per event-loop turn, joined: a worker accepts one push per request,
and a socket write for each was a system call per push on both ends. Every line goes through
the same buffer, so the order (and with it every guarantee of workers.py) is unchanged.
"""
from __future__ import annotations

import asyncio
import json
import socket
from typing import Callable


class _LineChannel(asyncio.Protocol):
    def __init__(self, on_message: Callable[[dict], None], on_push: Callable[[bytes], None],
                 closed: asyncio.Future) -> None:
        self._on_message = on_message
        self._on_push = on_push
        self._closed = closed
        self._buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        for line in lines:
            if line[:1] == b"P":
                self._on_push(line[1:])
            else:
                self._on_message(json.loads(line[1:]))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


class Peer:
    """One end of a parent/worker channel: fire-and-forget messages plus request/reply."""

    def __init__(self, handler: Callable[["Peer", dict], None],
                 on_push: Callable[[bytes], None] = lambda line: None) -> None:
        self._handler = handler
        self._on_push = on_push
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = 0
        self._channel: _LineChannel | None = None
        #: Lines waiting for the end of this loop turn (``_flush``); empty when none is due.
        self._outgoing: list[bytes] = []
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self.closed.add_done_callback(lambda _: self._fail_pending())

    async def attach(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        _, self._channel = await loop.connect_accepted_socket(
            lambda: _LineChannel(self._receive, self._on_push, self.closed), sock)

    def _write(self, line: bytes) -> None:
        if self._channel is None or self._channel.transport is None or self.closed.done():
            raise ConnectionError("channel closed")
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.append(line)

    def _flush(self) -> None:
        lines, self._outgoing = self._outgoing, []
        if self._channel is None or self._channel.transport is None or self.closed.done():
            return  # closed meanwhile: pending calls fail through ``closed``
        self._channel.transport.write(b"".join(lines))

    def send(self, message: dict) -> None:
        self._write(b"M" + json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send_push(self, received_at: float, record_json: str) -> None:
        self._write(b"P%.6f %s\n" % (received_at, record_json.encode()))

    def call(self, op: str, **fields: object) -> asyncio.Future:
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        try:
            self.send({"op": op, "id": self._next_id, **fields})
        except ConnectionError as error:
            self._pending.pop(self._next_id)
            future.set_exception(error)
        return future

    def reply(self, request: dict, **fields: object) -> None:
        self.send({"op": "reply", "id": request["id"], **fields})

    def _receive(self, message: dict) -> None:
        if message.get("op") == "reply":
            future = self._pending.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)
        else:
            self._handler(self, message)

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("channel closed"))
        self._pending.clear()

    def close(self) -> None:
        if self._outgoing:
            self._flush()  # this turn's lines first: a closing transport would drop them
        if self._channel is not None and self._channel.transport is not None:
            self._channel.transport.close()
