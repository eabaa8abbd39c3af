"""The HTTP/2-over-TLS front end: one asyncio Protocol per connection driving an nghttp2
session (``nghttp2.ServerSession``), routing finished requests to the services.

Why Protocol-level and not a framework: the emulator must sustain load-test rates from a
single Python process, so a request costs one dispatch call and no task; only scripted slow
replies and cross-process attempt counters defer the answer (a timer or a future).
"""
from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import nghttp2
from .apns_auth import ConnectionAuth
from .config import Settings
from .http_types import Outcome, Request, Response, json_response
from .logs import log


class Dispatcher(Protocol):
    """What a connection hands finished requests to: ``router.Router`` on the main port,
    ``channels.ChannelService`` on the channel-management port."""

    def dispatch(self, request: Request, auth: ConnectionAuth) -> Outcome: ...


#: Request bodies are buffered up to this size; beyond it only the length is kept (the services
#: reject such bodies anyway, and a client cannot make the emulator hold more).
MAX_BUFFERED_BODY = 64 * 1024
MAX_HEADER_LIST_SIZE = 64 * 1024
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


#: Bytes a field name may hold (RFC 9110 token characters, lower case only: RFC 9113 §8.2.1).
_FIELD_NAME_BYTES = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":path", b":authority"})
_CONNECTION_SPECIFIC = frozenset({b"connection", b"keep-alive", b"proxy-connection",
                                  b"transfer-encoding", b"upgrade"})
_BLANK = (b" ", b"\t")
#: Verdicts on fields already judged, by (name, value): most fields of a request
#: (authorization, apns-topic, content-type, :method, a device's :path...) come back on every
#: request, and judging one costs about 2 µs of Python (measured: 28 µs for an APNs
#: request's 13 fields). Bounded: emptied when full, so unique values (apns-id) cannot grow it.
_VERDICTS: dict[tuple[bytes, bytes], str | None] = {}
_MAX_VERDICTS = 4096
_UNSEEN = object()


def _judge(name: bytes, value: bytes) -> str | None:
    """What is wrong with one field on its own (its place in the block aside), or None."""
    if b"\x00" in value or b"\r" in value or b"\n" in value or value[:1] in _BLANK or value[-1:] in _BLANK:
        return "invalid field value"
    if name[:1] == b":":
        return None
    if not name or name.translate(None, _FIELD_NAME_BYTES):
        return "invalid field name"
    if name in _CONNECTION_SPECIFIC or (name == b"te" and value != b"trailers"):
        return "connection-specific header"
    return None


def malformed_request(headers: list[tuple[bytes, bytes]]) -> str | None:
    """Why a request header block is malformed under RFC 9113 §8.2-8.3, or None."""
    seen_pseudo: set[bytes] = set()
    regular = False
    for header in headers:
        problem = _VERDICTS.get(header, _UNSEEN)
        if problem is _UNSEEN:
            problem = _judge(*header)
            if len(_VERDICTS) >= _MAX_VERDICTS:
                _VERDICTS.clear()
            _VERDICTS[header] = problem
        if problem is not None:
            return problem  # type: ignore[return-value]
        name = header[0]
        if name[:1] == b":":
            if regular or name not in _REQUEST_PSEUDO or name in seen_pseudo:
                return "misplaced, unknown or repeated pseudo-header"
            seen_pseudo.add(name)
        else:
            regular = True
    if not {b":method", b":scheme", b":path"} <= seen_pseudo:
        return "missing pseudo-header"
    return None


class Http2Connection(asyncio.Protocol):
    """One client connection: TLS from asyncio, HTTP/2 from nghttp2 (``nghttp2.SessionEvents``
    are the methods under "inbound"), requests to the dispatcher."""

    def __init__(self, router: Dispatcher, settings: Settings, registry: set["Http2Connection"]) -> None:
        self._router = router
        self._settings = settings
        self._registry = registry
        self._session: nghttp2.ServerSession | None = None
        self._transport: asyncio.Transport | None = None
        self._streams: dict[int, _Stream] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._waiting: dict[int, asyncio.Future] = {}
        self._auth = ConnectionAuth()
        self._closed = False
        #: Set once no new streams will come (GOAWAY sent or received): the connection closes
        #: as soon as nothing is pending.
        self._closing = False
        self._drained: asyncio.Future | None = None
        #: True while nghttp2 is calling back into this connection: the session must not be
        #: freed under it, so a close asked for meanwhile waits until the call returns.
        self._in_session = False

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
        self._session = nghttp2.ServerSession(self, settings=[
            (nghttp2.SETTINGS_MAX_CONCURRENT_STREAMS, self._settings.max_streams),
            (nghttp2.SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            (nghttp2.SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST_SIZE),
        ], connection_window=CONNECTION_WINDOW, max_header_list_size=MAX_HEADER_LIST_SIZE)
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
        if self._session is not None and not self._in_session:
            self._session.close()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def shutdown(self, grace: float) -> None:
        """GOAWAY (no new streams), let in-flight replies finish for up to ``grace`` s, close."""
        if self._closed or self._session is None or self._transport is None:
            return
        self._session.goaway(nghttp2.NO_ERROR, SHUTDOWN_DEBUG_DATA)
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
        session = self._session
        if session is None or self._closed:
            return
        self._in_session = True
        try:
            problem = session.receive(data)
        finally:
            self._in_session = False
        if self._closed:  # lost while nghttp2 was calling back: free it now
            session.close()
            return
        if problem is not None:  # a GOAWAY with the error code is queued (ServerSession.receive)
            if not self._closing:  # after our GOAWAY, refused frames are not worth a warning
                log("protocol_error", level="warning", error=problem)
            self._flush()
            self._close()
            return
        self._flush()
        if session.finished():  # a connection error nghttp2 answered with GOAWAY itself
            if not self._closing:
                log("protocol_error", level="warning", error=session.last_error or "connection ended by the HTTP/2 layer")
            self._close()

    def request_headers(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None:
        problem = malformed_request(headers)
        if problem is not None:
            log("malformed_request", level="warning", why=problem)
            self._session.reset(stream_id, nghttp2.PROTOCOL_ERROR)  # type: ignore[union-attr]
            return
        method = path = ""
        regular: list[tuple[str, str]] = []
        for name, value in headers:
            if name[:1] == b":":
                if name == b":method":
                    method = value.decode("latin-1")
                elif name == b":path":
                    path = value.decode("latin-1")
            else:
                # latin-1 keeps one character per byte, so lengths are byte counts.
                regular.append((name.decode("latin-1"), value.decode("latin-1")))
        self._streams[stream_id] = _Stream(method, path, regular, time.time())

    def request_refused(self, stream_id: int, why: str) -> None:
        """The session reset a request before its header block ended (too large)."""
        log("malformed_request", level="warning", why=why)

    def body_chunk(self, stream_id: int, data: bytes) -> None:
        # nghttp2 hands the window back as bytes arrive: bodies are small and handled at once.
        stream = self._streams.get(stream_id)
        if stream is not None:
            stream.length += len(data)
            if len(stream.body) < MAX_BUFFERED_BODY:
                stream.body += data[: MAX_BUFFERED_BODY - len(stream.body)]

    def request_ended(self, stream_id: int) -> None:
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

    def stream_closed(self, stream_id: int) -> None:
        """The stream ended, answered or reset by the client: drop whatever was pending for it."""
        self._streams.pop(stream_id, None)
        timer = self._timers.pop(stream_id, None)
        if timer is not None:
            timer.cancel()
        waiting = self._waiting.pop(stream_id, None)
        if waiting is not None:
            waiting.cancel()
        self._maybe_drained()

    def goaway_received(self) -> None:
        """The client's GOAWAY: finish what it sent, then close."""
        self._close_when_drained()

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
        if self._closed or self._session is None:
            return
        self._session.respond(stream_id, response.status, response.headers, response.body)
        self._maybe_drained()

    def _idle(self) -> bool:
        """Nothing left to answer or to send."""
        return not (self._timers or self._waiting or self._streams
                    or (self._session is not None and self._session.sending_body()))

    def _maybe_drained(self) -> None:
        if not self._idle():
            return
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._closing:
            self._flush()  # which closes once the rest is written (inside a callback: after it)

    def _flush(self) -> None:
        session = self._session
        if session is None or self._transport is None or self._in_session:
            return
        self._in_session = True  # mem_send calls back (stream closes, body reads)
        try:
            data = session.data_to_send()
        finally:
            self._in_session = False
        if data:
            self._transport.write(data)
        if session.failed:  # a callback failed while sending: nothing more can be sent
            log("protocol_error", level="error", error=session.last_error)
            self._close()
        elif self._closing and self._idle():
            self._close()
