"""The HTTP/2-over-TLS front end: one asyncio Protocol per connection driving an ``h2`` state
machine, routing finished requests to the services.

Why Protocol-level and not a framework: the emulator must sustain load-test rates from a
single Python process, so a request costs one dispatch call and no task; only scripted slow
replies and cross-process attempt counters defer the answer (a timer or a future).
"""
from __future__ import annotations

import asyncio
import re
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (ConnectionTerminated, DataReceived, RequestReceived, StreamEnded, StreamReset,
                       WindowUpdated)
from h2.exceptions import ProtocolError, StreamClosedError
from h2.settings import SettingCodes, Settings as H2Settings

from . import h2_speedups
from .apns_auth import ConnectionAuth
from .config import Settings
from .http_types import Outcome, Request, Response, json_response
from .logs import log


class Dispatcher(Protocol):
    """What a connection hands finished requests to: ``router.Router`` on the main port,
    ``channels.ChannelService`` on the channel-management port."""

    def dispatch(self, request: Request, auth: ConnectionAuth) -> Outcome: ...


h2_speedups.install()

#: Request bodies are buffered up to this size; beyond it only the length is kept (the services
#: reject such bodies anyway, and a client cannot make the emulator hold more).
MAX_BUFFERED_BODY = 64 * 1024
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 24
#: What APNs puts in its GOAWAY debug data when it closes connections for maintenance.
SHUTDOWN_DEBUG_DATA = b'{"reason":"Shutdown"}'


@dataclass(slots=True)
class _Stream:
    method: str
    path: str
    headers: list[tuple[str, str]]
    received_at: float
    body: bytearray = field(default_factory=bytearray)
    length: int = 0


def make_tls_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """TLS 1.2+ with the cipher suites HTTP/2 allows, offering only ``h2`` like APNs does."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    context.set_ciphers("ECDHE+AESGCM:ECDHE+CHACHA20")
    context.set_alpn_protocols(["h2"])
    context.options |= ssl.OP_NO_COMPRESSION
    return context


def make_h2_config() -> H2Configuration:
    """h2's own header validation walks every byte of every name in Python (measured: 40% of
    the per-request cost); ``malformed_request`` checks the same RFC 9113 rules with regular
    expressions instead. Our response headers are known-good and not re-checked."""
    return H2Configuration(client_side=False, header_encoding=None,
                           validate_outbound_headers=False, normalize_outbound_headers=False,
                           validate_inbound_headers=False, normalize_inbound_headers=False)


_FIELD_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9a-z]+\Z")
_BAD_FIELD_VALUE = re.compile(rb"[\x00\r\n]|\A[ \t]|[ \t]\Z")
_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":path", b":authority"})
_CONNECTION_SPECIFIC = frozenset({b"connection", b"keep-alive", b"proxy-connection",
                                  b"transfer-encoding", b"upgrade"})


def malformed_request(headers: list[tuple[bytes, bytes]]) -> str | None:
    """Why a request header block is malformed under RFC 9113 §8.2-8.3, or None."""
    seen_pseudo: set[bytes] = set()
    regular = False
    for name, value in headers:
        if _BAD_FIELD_VALUE.search(value):
            return "invalid field value"
        if name[:1] == b":":
            if regular or name not in _REQUEST_PSEUDO or name in seen_pseudo:
                return "misplaced, unknown or repeated pseudo-header"
            seen_pseudo.add(name)
            continue
        regular = True
        if not _FIELD_NAME.match(name):
            return "invalid field name"
        if name in _CONNECTION_SPECIFIC or (name == b"te" and value != b"trailers"):
            return "connection-specific header"
    if not {b":method", b":scheme", b":path"} <= seen_pseudo:
        return "missing pseudo-header"
    return None


class Http2Connection(asyncio.Protocol):
    def __init__(self, router: Dispatcher, settings: Settings, h2_config: H2Configuration,
                 registry: set["Http2Connection"]) -> None:
        self._router = router
        self._settings = settings
        self._h2_config = h2_config
        self._registry = registry
        self._conn: H2Connection | None = None
        self._transport: asyncio.Transport | None = None
        self._streams: dict[int, _Stream] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._waiting: dict[int, asyncio.Future] = {}
        self._blocked: dict[int, bytes] = {}
        self._auth = ConnectionAuth()
        self._closed = False
        #: Set once no new streams will come (GOAWAY sent or received): the connection closes
        #: as soon as nothing is pending.
        self._closing = False
        self._drained: asyncio.Future | None = None

    # -- connection lifecycle ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        ssl_object = transport.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        if alpn != "h2":
            log("connection_refused", level="warning", why="client did not negotiate h2 via ALPN",
                alpn=alpn)
            transport.close()
            self._closed = True
            return
        self._registry.add(self)
        conn = H2Connection(config=self._h2_config)
        conn.local_settings = H2Settings(client=False, initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: self._settings.max_streams,
            SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            SettingCodes.MAX_HEADER_LIST_SIZE: 64 * 1024,
        })
        conn.initiate_connection()
        conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self._conn = conn
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._registry.discard(self)
        for timer in self._timers.values():
            timer.cancel()
        for waiting in self._waiting.values():
            waiting.cancel()
        self._timers.clear()
        self._waiting.clear()
        self._streams.clear()
        self._blocked.clear()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def shutdown(self, grace: float) -> None:
        """GOAWAY (no new streams), let in-flight replies finish for up to ``grace`` s, close."""
        if self._closed or self._conn is None or self._transport is None:
            return
        self._conn.close_connection(ErrorCodes.NO_ERROR, SHUTDOWN_DEBUG_DATA)
        self._flush()
        self._drained = asyncio.get_running_loop().create_future()
        self._close_when_drained()
        try:
            await asyncio.wait_for(asyncio.shield(self._drained), grace)
        except asyncio.TimeoutError:
            pass
        self._close()

    def _close_when_drained(self) -> None:
        self._closing = True
        self._maybe_drained()

    def _close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    # -- inbound -----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            events = conn.receive_data(data)
        except ProtocolError as error:  # h2 has queued GOAWAY with the right error code
            if not self._closing:  # after our GOAWAY, h2 refuses new frames: not worth a warning
                log("protocol_error", level="warning", error=str(error))
            self._flush()
            self._close()
            return
        for event in events:
            kind = type(event)
            if kind is RequestReceived:
                self._on_request(event)  # type: ignore[arg-type]
            elif kind is DataReceived:
                self._on_data(event)  # type: ignore[arg-type]
            elif kind is StreamEnded:
                self._on_end(event.stream_id)  # type: ignore[attr-defined]
            elif kind is StreamReset:
                self._forget(event.stream_id)  # type: ignore[attr-defined]
            elif kind is WindowUpdated:
                self._resume_blocked()
            elif kind is ConnectionTerminated:  # the client's GOAWAY: finish what it sent
                self._close_when_drained()
        self._flush()

    def _on_request(self, event: RequestReceived) -> None:
        problem = malformed_request(event.headers)  # type: ignore[arg-type]
        if problem is not None:
            log("malformed_request", level="warning", why=problem)
            self._conn.reset_stream(event.stream_id, ErrorCodes.PROTOCOL_ERROR)  # type: ignore[union-attr]
            return
        method = path = ""
        headers: list[tuple[str, str]] = []
        for name, value in event.headers:  # bytes, as header_encoding is None
            if name[:1] == b":":
                if name == b":method":
                    method = value.decode("latin-1")
                elif name == b":path":
                    path = value.decode("latin-1")
            else:
                # latin-1 keeps one character per byte, so lengths are byte counts.
                headers.append((name.decode("latin-1"), value.decode("latin-1")))
        self._streams[event.stream_id] = _Stream(method, path, headers, time.time())

    def _on_data(self, event: DataReceived) -> None:
        stream = self._streams.get(event.stream_id)
        if stream is not None:
            data = event.data
            stream.length += len(data)
            if len(stream.body) < MAX_BUFFERED_BODY:
                stream.body += data[: MAX_BUFFERED_BODY - len(stream.body)]
        # Hand the window back at once: bodies are small and handled as soon as they end.
        assert self._conn is not None
        self._conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)

    def _on_end(self, stream_id: int) -> None:
        stream = self._streams.pop(stream_id, None)
        if stream is None:
            return
        request = Request(stream.method, stream.path, stream.headers, bytes(stream.body),
                          stream.received_at, stream.length)
        try:
            outcome = self._router.dispatch(request, self._auth)
        except Exception as error:  # a bug must cost one request, not the connection
            log("handler_error", level="error", error=repr(error), path=stream.path.split("/")[1:3])
            outcome = json_response(500, {"reason": "InternalServerError"})
        if isinstance(outcome, Response):
            self._respond(stream_id, outcome)
        else:
            self._waiting[stream_id] = outcome
            outcome.add_done_callback(lambda done: self._resolved(stream_id, done))

    def _resolved(self, stream_id: int, done: asyncio.Future) -> None:
        if self._waiting.pop(stream_id, None) is None or done.cancelled():
            return
        error = done.exception()
        if error is not None:
            log("handler_error", level="error", error=repr(error))
            response = json_response(500, {"reason": "InternalServerError"})
        else:
            response = done.result()
        self._respond(stream_id, response, flush=True)

    def _forget(self, stream_id: int) -> None:
        """The client reset the stream: drop whatever was pending for it."""
        self._streams.pop(stream_id, None)
        self._blocked.pop(stream_id, None)
        timer = self._timers.pop(stream_id, None)
        if timer is not None:
            timer.cancel()
        waiting = self._waiting.pop(stream_id, None)
        if waiting is not None:
            waiting.cancel()
        self._maybe_drained()

    # -- outbound ----------------------------------------------------------------------------

    def _respond(self, stream_id: int, response: Response, flush: bool = False) -> None:
        if response.delay > 0:
            loop = asyncio.get_running_loop()
            self._timers[stream_id] = loop.call_later(response.delay, self._send_later, stream_id, response)
            return
        self._send(stream_id, response)
        if flush:
            self._flush()

    def _send_later(self, stream_id: int, response: Response) -> None:
        if self._timers.pop(stream_id, None) is None:
            return
        self._send(stream_id, response)
        self._flush()

    def _send(self, stream_id: int, response: Response) -> None:
        conn = self._conn
        if self._closed or conn is None:
            return
        headers = [(":status", str(response.status)), *response.headers]
        body = response.body
        if body:
            headers.append(("content-length", str(len(body))))
        try:
            conn.send_headers(stream_id, headers, end_stream=not body)
            if body:
                self._send_body(stream_id, body)
        except (StreamClosedError, ProtocolError):
            pass  # the client reset or closed the stream meanwhile
        self._maybe_drained()

    def _send_body(self, stream_id: int, body: bytes) -> None:
        conn = self._conn
        assert conn is not None
        while body:
            window = conn.local_flow_control_window(stream_id)
            if window <= 0:
                self._blocked[stream_id] = body  # resumed on WindowUpdated
                return
            chunk = body[: min(window, conn.max_outbound_frame_size)]
            body = body[len(chunk):]
            conn.send_data(stream_id, chunk, end_stream=not body)
        self._blocked.pop(stream_id, None)

    def _resume_blocked(self) -> None:
        for stream_id, body in list(self._blocked.items()):
            try:
                self._send_body(stream_id, body)
            except (StreamClosedError, ProtocolError):
                self._blocked.pop(stream_id, None)
        self._maybe_drained()

    def _maybe_drained(self) -> None:
        if self._timers or self._waiting or self._blocked or self._streams:
            return
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._closing:
            self._flush()
            self._close()

    def _flush(self) -> None:
        conn = self._conn
        if conn is None or self._transport is None:
            return
        data = conn.data_to_send()
        if data:
            self._transport.write(data)
