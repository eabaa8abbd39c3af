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
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (ConnectionTerminated, DataReceived, RequestReceived, StreamEnded, StreamReset,
                       WindowUpdated)
from h2.exceptions import ProtocolError, StreamClosedError
from h2.settings import SettingCodes, Settings as H2Settings

from . import hpack_speedups
from .apns import DEVICE_PATH, ApnsService, ConnectionAuth
from .config import Settings
from .fcm import FcmService, google_error
from .http_types import Outcome, Request, Response, json_response
from .logs import log
from .oauth import OAuthService
from .state import LocalState

hpack_speedups.install()

#: Request bodies are buffered up to this size; beyond it only the length is kept (the services
#: reject such bodies anyway, and a client cannot make the emulator hold more).
MAX_BUFFERED_BODY = 64 * 1024
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 24
_FCM_SEND = re.compile(r"/v1/projects/([^/]+)/messages:send\Z")
#: What APNs puts in its GOAWAY debug data when it closes connections for maintenance.
SHUTDOWN_DEBUG_DATA = b'{"reason":"Shutdown"}'


class Router:
    """Maps a path to its service. Unknown paths get APNs' ``BadPath`` unless they look like a
    Google API path, which gets Google's 404."""

    def __init__(self, apns: ApnsService, fcm: FcmService, oauth: OAuthService, state: LocalState) -> None:
        self.apns, self.fcm, self.oauth, self._state = apns, fcm, oauth, state

    def dispatch(self, request: Request, auth: ConnectionAuth) -> Outcome:
        path = request.path
        if path.startswith(DEVICE_PATH):
            return self.apns.handle(request, auth)
        route = path.partition("?")[0]
        if route == "/token":
            return self.oauth.handle(request)
        match = _FCM_SEND.match(route)
        if match:
            return self.fcm.handle(request, match.group(1))
        if route.startswith("/v1/"):
            self._state.outcome("other", 404, "NOT_FOUND", None)
            return google_error(404, "NOT_FOUND", "Requested entity was not found.")
        self._state.outcome("other", 404, "BadPath", None)
        return json_response(404, {"reason": "BadPath"}, [("apns-id", str(uuid.uuid4()))])


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


def make_h2_config(settings: Settings) -> H2Configuration:
    # Our own response headers are known to be valid: checking them again only costs time.
    # Inbound validation stays on except in --fast mode (it rejects malformed requests the
    # way a real server does, but it is a sizeable part of the per-request cost).
    return H2Configuration(client_side=False, header_encoding=None,
                           validate_outbound_headers=False, normalize_outbound_headers=False,
                           validate_inbound_headers=not settings.fast,
                           normalize_inbound_headers=not settings.fast)


class Http2Connection(asyncio.Protocol):
    def __init__(self, router: Router, settings: Settings, h2_config: H2Configuration,
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
        if self._timers or self._waiting or self._blocked:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._drained), grace)
            except asyncio.TimeoutError:
                pass
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    # -- inbound -----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            events = conn.receive_data(data)
        except ProtocolError as error:
            log("protocol_error", level="warning", error=str(error))
            self._flush()
            if self._transport is not None:
                self._transport.close()
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
            elif kind is ConnectionTerminated:
                self._flush()
                if self._transport is not None:
                    self._transport.close()
                return
        self._flush()

    def _on_request(self, event: RequestReceived) -> None:
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
        self._conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)  # type: ignore[union-attr]

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
        if (self._drained is not None and not self._drained.done()
                and not (self._timers or self._waiting or self._blocked)):
            self._drained.set_result(None)

    def _flush(self) -> None:
        conn = self._conn
        if conn is None or self._transport is None:
            return
        data = conn.data_to_send()
        if data:
            self._transport.write(data)
