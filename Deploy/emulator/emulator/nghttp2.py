"""The server side of HTTP/2, done by Debian's ``libnghttp2`` (the C library behind nghttpx,
curl and Apache's mod_http2) through ``cffi`` in ABI mode: no compiler, only ``libnghttp2-14``.

Why not the pure-Python ``h2``: the emulator shares the machine with the workers it measures,
and h2's framing, HPACK and stream state machine were about 60% of its CPU per push (py-spy,
a backlog drain). nghttp2 does all three in C; Python sees one call per event that matters
(a header field, a body chunk, a finished frame, a closed stream).

``ServerSession`` owns one ``nghttp2_session`` and reports to a ``SessionEvents`` object.
nghttp2 works on memory: ``receive`` feeds it bytes, ``data_to_send`` takes what it queued.
HTTP messaging checks are off (``no_http_messaging``): the emulator validates header blocks
itself (``server.malformed_request``), so a malformed block is logged and reset the same way
whatever the library would have said about it.
"""
from __future__ import annotations

import weakref
from typing import Protocol

from cffi import FFI

from .logs import log

ffi = FFI()
ffi.cdef("""
typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
typedef struct nghttp2_option nghttp2_option;

typedef struct { size_t length; int32_t stream_id; uint8_t type; uint8_t flags; uint8_t reserved; } nghttp2_frame_hd;
typedef struct { int32_t stream_id; int32_t weight; uint8_t exclusive; } nghttp2_priority_spec;
typedef struct { char *name; char *value; size_t namelen; size_t valuelen; uint8_t flags; } nghttp2_nv;
typedef struct {
    nghttp2_frame_hd hd; size_t padlen; nghttp2_priority_spec pri_spec; nghttp2_nv *nva; size_t nvlen; int cat;
} nghttp2_headers;
typedef struct {
    nghttp2_frame_hd hd; int32_t last_stream_id; uint32_t error_code; char *opaque_data; size_t opaque_data_len;
    uint8_t reserved;
} nghttp2_goaway;
/* Only the members read here; nghttp2 hands out pointers, so the smaller union is enough. */
typedef union { nghttp2_frame_hd hd; nghttp2_headers headers; nghttp2_goaway goaway; } nghttp2_frame;
typedef struct { int32_t settings_id; uint32_t value; } nghttp2_settings_entry;
typedef union { int fd; void *ptr; } nghttp2_data_source;
typedef ssize_t (*nghttp2_data_source_read_callback)(nghttp2_session *, int32_t, uint8_t *, size_t, uint32_t *,
                                                     nghttp2_data_source *, void *);
typedef struct { nghttp2_data_source source; nghttp2_data_source_read_callback read_callback; } nghttp2_data_provider;

typedef int (*nghttp2_on_frame_recv_callback)(nghttp2_session *, const nghttp2_frame *, void *);
typedef int (*nghttp2_on_frame_send_callback)(nghttp2_session *, const nghttp2_frame *, void *);
typedef int (*nghttp2_on_data_chunk_recv_callback)(nghttp2_session *, uint8_t, int32_t, const char *, size_t, void *);
typedef int (*nghttp2_on_stream_close_callback)(nghttp2_session *, int32_t, uint32_t, void *);
typedef int (*nghttp2_on_begin_headers_callback)(nghttp2_session *, const nghttp2_frame *, void *);
typedef int (*nghttp2_on_header_callback)(nghttp2_session *, const nghttp2_frame *, const char *, size_t,
                                          const char *, size_t, uint8_t, void *);
typedef int (*nghttp2_error_callback2)(nghttp2_session *, int, const char *, size_t, void *);

int nghttp2_session_callbacks_new(nghttp2_session_callbacks **);
void nghttp2_session_callbacks_set_on_frame_recv_callback(nghttp2_session_callbacks *, nghttp2_on_frame_recv_callback);
void nghttp2_session_callbacks_set_on_data_chunk_recv_callback(nghttp2_session_callbacks *,
                                                               nghttp2_on_data_chunk_recv_callback);
void nghttp2_session_callbacks_set_on_stream_close_callback(nghttp2_session_callbacks *, nghttp2_on_stream_close_callback);
void nghttp2_session_callbacks_set_on_begin_headers_callback(nghttp2_session_callbacks *,
                                                             nghttp2_on_begin_headers_callback);
void nghttp2_session_callbacks_set_on_header_callback(nghttp2_session_callbacks *, nghttp2_on_header_callback);
void nghttp2_session_callbacks_set_error_callback2(nghttp2_session_callbacks *, nghttp2_error_callback2);
void nghttp2_session_callbacks_set_on_frame_send_callback(nghttp2_session_callbacks *, nghttp2_on_frame_send_callback);

int nghttp2_option_new(nghttp2_option **);
void nghttp2_option_set_no_http_messaging(nghttp2_option *, int);

int nghttp2_session_server_new2(nghttp2_session **, const nghttp2_session_callbacks *, void *, const nghttp2_option *);
void nghttp2_session_del(nghttp2_session *);
ssize_t nghttp2_session_mem_recv(nghttp2_session *, const char *, size_t);
ssize_t nghttp2_session_mem_send(nghttp2_session *, const char **);
int nghttp2_session_want_read(nghttp2_session *);
int nghttp2_session_want_write(nghttp2_session *);
int32_t nghttp2_session_get_last_proc_stream_id(nghttp2_session *);
int nghttp2_session_terminate_session(nghttp2_session *, uint32_t);
int nghttp2_submit_settings(nghttp2_session *, uint8_t, const nghttp2_settings_entry *, size_t);
int nghttp2_submit_window_update(nghttp2_session *, uint8_t, int32_t, int32_t);
int nghttp2_submit_response(nghttp2_session *, int32_t, const nghttp2_nv *, size_t, const nghttp2_data_provider *);
int nghttp2_submit_rst_stream(nghttp2_session *, uint8_t, int32_t, uint32_t);
int nghttp2_submit_goaway(nghttp2_session *, uint8_t, int32_t, uint32_t, const char *, size_t);
const char *nghttp2_strerror(int);
""")

_lib = ffi.dlopen("libnghttp2.so.14")

# nghttp2.h constants (stable ABI values).
_DATA, _HEADERS, _GOAWAY = 0x00, 0x01, 0x07
_FLAG_END_STREAM = 0x01
_HCAT_REQUEST = 0
_DATA_FLAG_EOF = 0x01
_ERR_CALLBACK_FAILURE = -902
_ERR_TEMPORAL_CALLBACK_FAILURE = -521
_ERR_FLOODED = -904
_ERR_TOO_MANY_CONTINUATIONS = -905
SETTINGS_MAX_CONCURRENT_STREAMS = 0x03
SETTINGS_INITIAL_WINDOW_SIZE = 0x04
SETTINGS_MAX_HEADER_LIST_SIZE = 0x06
NO_ERROR = 0x00
PROTOCOL_ERROR = 0x01
ENHANCE_YOUR_CALM = 0x0b


class SessionEvents(Protocol):
    """What a session reports, in the order frames arrive."""

    def request_headers(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None: ...
    def request_refused(self, stream_id: int, why: str) -> None: ...
    def body_chunk(self, stream_id: int, data: bytes) -> None: ...
    def request_ended(self, stream_id: int) -> None: ...
    def stream_closed(self, stream_id: int) -> None: ...
    def goaway_received(self) -> None: ...


class ServerSession:
    """One server-side HTTP/2 connection's protocol state, on the caller's thread only."""

    def __init__(self, events: SessionEvents, settings: list[tuple[int, int]], connection_window: int,
                 max_header_list_size: int) -> None:
        self._events = events
        self._max_header_list_size = max_header_list_size
        #: Header fields of request blocks still arriving, with their running size.
        self._incoming: dict[int, tuple[list[tuple[bytes, bytes]], int]] = {}
        #: Response bodies nghttp2 is still reading (it pauses them while the window is shut).
        self._bodies: dict[int, tuple[bytes, int]] = {}
        #: nghttp2's own words for the last connection error it met (its error callback).
        self.last_error: str | None = None
        self.failed = False
        self._handle = ffi.new_handle(self)  # kept: nghttp2 holds only the raw pointer
        session = ffi.new("nghttp2_session **")
        _check(_lib.nghttp2_session_server_new2(session, _CALLBACKS, self._handle, _OPTION), "session_server_new2")
        self._session = session[0]
        # Frees the C session once, from close() or, should a path ever skip that, when this
        # object is collected.
        self._free = weakref.finalize(self, _lib.nghttp2_session_del, self._session)
        entries = ffi.new("nghttp2_settings_entry[]", [{"settings_id": k, "value": v} for k, v in settings])
        _check(_lib.nghttp2_submit_settings(self._session, 0, entries, len(settings)), "submit_settings")
        if connection_window > 65535:
            _check(_lib.nghttp2_submit_window_update(self._session, 0, 0, connection_window - 65535), "window_update")

    def receive(self, data: bytes) -> str | None:
        """Feeds bytes from the peer; why the connection cannot go on, or None.

        nghttp2 answers most connection errors with GOAWAY by itself (``finished`` then says
        so, and ``last_error`` why). A fatal error (a bad preface, a flood, too many
        CONTINUATION frames, a failed callback) makes it stop without one: a GOAWAY is queued
        here, so the client always learns why, as RFC 9113 §5.4.1 asks."""
        if self._session is None:
            return None
        consumed = _lib.nghttp2_session_mem_recv(self._session, data, len(data))
        if consumed >= 0:
            return None
        code = ENHANCE_YOUR_CALM if consumed in (_ERR_FLOODED, _ERR_TOO_MANY_CONTINUATIONS) else PROTOCOL_ERROR
        _lib.nghttp2_session_terminate_session(self._session, code)
        return self.last_error or ffi.string(_lib.nghttp2_strerror(consumed)).decode()

    def data_to_send(self) -> bytes:
        """What nghttp2 has queued; a failure here (only from a callback) ends the session."""
        if self._session is None:
            return b""
        chunks = []
        data = ffi.new("const char **")
        while True:
            count = _lib.nghttp2_session_mem_send(self._session, data)
            if count < 0:
                self.last_error = self.last_error or ffi.string(_lib.nghttp2_strerror(count)).decode()
                self.failed = True
                break
            if count == 0:
                break
            chunks.append(ffi.buffer(data[0], count)[:])
        return b"".join(chunks)

    def finished(self) -> bool:
        """True once nghttp2 neither expects nor has anything more (after a GOAWAY exchange, a
        connection error it answered, or a failure while sending)."""
        return self._session is None or self.failed or not (
            _lib.nghttp2_session_want_read(self._session) or _lib.nghttp2_session_want_write(self._session))

    def respond(self, stream_id: int, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        if self._session is None:
            return
        fields = [(b":status", str(status).encode()), *((n.encode(), v.encode()) for n, v in headers)]
        if body:
            fields.append((b"content-length", str(len(body)).encode()))
        nva = ffi.new("nghttp2_nv[]", len(fields))
        keep = []
        for slot, (name, value) in zip(nva, fields):
            name_buffer, value_buffer = ffi.from_buffer(name), ffi.from_buffer(value)
            keep += (name_buffer, value_buffer)
            slot.name, slot.namelen, slot.value, slot.valuelen = name_buffer, len(name), value_buffer, len(value)
        provider = ffi.NULL
        if body:
            self._bodies[stream_id] = (body, 0)
            provider = _BODY_PROVIDER
        # nghttp2 copies the fields (and the provider struct) before returning. A stream the
        # client has reset meanwhile makes this fail or drop the frame: nothing left to answer.
        if _lib.nghttp2_submit_response(self._session, stream_id, nva, len(fields), provider) != 0:
            self._bodies.pop(stream_id, None)

    def sending_body(self) -> bool:
        return bool(self._bodies)

    def reset(self, stream_id: int, error_code: int) -> None:
        if self._session is not None:
            _lib.nghttp2_submit_rst_stream(self._session, 0, stream_id, error_code)

    def goaway(self, error_code: int, debug_data: bytes) -> None:
        """GOAWAY naming the last stream processed: those are still answered, no new ones."""
        if self._session is not None:
            last = _lib.nghttp2_session_get_last_proc_stream_id(self._session)
            _lib.nghttp2_submit_goaway(self._session, 0, last, error_code, debug_data, len(debug_data))

    def close(self) -> None:
        """Frees the session; never from inside one of its callbacks."""
        if self._session is not None:
            self._free()
            self._session = None
        self._incoming.clear()
        self._bodies.clear()

    # -- from the callbacks --------------------------------------------------------------------

    def _begin_headers(self, frame) -> None:
        if frame.hd.type == _HEADERS and frame.headers.cat == _HCAT_REQUEST:
            self._incoming[frame.hd.stream_id] = ([], 0)

    def _header(self, stream_id: int, name: bytes, value: bytes) -> int:
        incoming = self._incoming.get(stream_id)
        if incoming is None:
            return 0  # trailers: not used by any API the emulator serves
        fields, size = incoming
        size += len(name) + len(value) + 32  # RFC 9113 §6.5.2's accounting
        if size > self._max_header_list_size:
            del self._incoming[stream_id]
            _lib.nghttp2_submit_rst_stream(self._session, 0, stream_id, PROTOCOL_ERROR)
            self._events.request_refused(stream_id, f"header list larger than {self._max_header_list_size} bytes")
            return _ERR_TEMPORAL_CALLBACK_FAILURE  # nghttp2 then ignores the rest of the block
        fields.append((name, value))
        self._incoming[stream_id] = (fields, size)
        return 0

    def _frame(self, frame) -> None:
        kind, stream_id = frame.hd.type, frame.hd.stream_id
        if kind == _HEADERS:
            incoming = self._incoming.pop(stream_id, None)
            if incoming is not None:
                self._events.request_headers(stream_id, incoming[0])
            if frame.hd.flags & _FLAG_END_STREAM:
                self._events.request_ended(stream_id)
        elif kind == _DATA:
            if frame.hd.flags & _FLAG_END_STREAM:
                self._events.request_ended(stream_id)
        elif kind == _GOAWAY:
            self._events.goaway_received()

    def _read_body(self, stream_id: int, buffer, length: int, flags) -> int:
        pending = self._bodies.get(stream_id)
        if pending is None:
            flags[0] |= _DATA_FLAG_EOF
            return 0
        body, offset = pending
        count = min(length, len(body) - offset)
        ffi.memmove(buffer, body[offset:offset + count], count)
        offset += count
        if offset >= len(body):
            flags[0] |= _DATA_FLAG_EOF
            del self._bodies[stream_id]
        else:
            self._bodies[stream_id] = (body, offset)
        return count

    def _stream_closed(self, stream_id: int) -> None:
        self._incoming.pop(stream_id, None)
        self._bodies.pop(stream_id, None)
        self._events.stream_closed(stream_id)


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"nghttp2_{what}: {ffi.string(_lib.nghttp2_strerror(status)).decode()}")


def _failed(exception, value, traceback) -> None:
    """A callback raised: the connection fails (nghttp2 sees CALLBACK_FAILURE), logged once."""
    log("handler_error", level="error", error=repr(value))


@ffi.callback("nghttp2_on_begin_headers_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_begin_headers(session, frame, user_data):
    ffi.from_handle(user_data)._begin_headers(frame)
    return 0


@ffi.callback("nghttp2_on_header_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_header(session, frame, name, namelen, value, valuelen, flags, user_data):
    return ffi.from_handle(user_data)._header(frame.hd.stream_id, ffi.unpack(name, namelen), ffi.unpack(value, valuelen))


@ffi.callback("nghttp2_on_data_chunk_recv_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_data_chunk(session, flags, stream_id, data, length, user_data):
    ffi.from_handle(user_data)._events.body_chunk(stream_id, ffi.unpack(data, length))
    return 0


@ffi.callback("nghttp2_on_frame_recv_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_frame(session, frame, user_data):
    ffi.from_handle(user_data)._frame(frame)
    return 0


@ffi.callback("nghttp2_on_stream_close_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_stream_close(session, stream_id, error_code, user_data):
    ffi.from_handle(user_data)._stream_closed(stream_id)
    return 0


@ffi.callback("nghttp2_on_frame_send_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_frame_sent(session, frame, user_data):
    # A GOAWAY nghttp2 sends for a connection error carries its reason as debug data.
    if frame.hd.type == _GOAWAY and frame.goaway.error_code != NO_ERROR:
        this = ffi.from_handle(user_data)
        length = frame.goaway.opaque_data_len
        reason = ffi.unpack(frame.goaway.opaque_data, length).decode("utf-8", "replace") if length else ""
        this.last_error = reason or this.last_error or f"GOAWAY error code {frame.goaway.error_code}"
    return 0


@ffi.callback("nghttp2_error_callback2", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _on_error(session, lib_error_code, message, length, user_data):
    ffi.from_handle(user_data).last_error = ffi.unpack(message, length).decode("utf-8", "replace")
    return 0


@ffi.callback("nghttp2_data_source_read_callback", error=_ERR_CALLBACK_FAILURE, onerror=_failed)
def _read_body(session, stream_id, buffer, length, flags, source, user_data):
    return ffi.from_handle(user_data)._read_body(stream_id, buffer, length, flags)


def _make_callbacks():
    pointer = ffi.new("nghttp2_session_callbacks **")
    _check(_lib.nghttp2_session_callbacks_new(pointer), "session_callbacks_new")
    callbacks = pointer[0]
    _lib.nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, _on_begin_headers)
    _lib.nghttp2_session_callbacks_set_on_header_callback(callbacks, _on_header)
    _lib.nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, _on_data_chunk)
    _lib.nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, _on_frame)
    _lib.nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, _on_stream_close)
    _lib.nghttp2_session_callbacks_set_error_callback2(callbacks, _on_error)
    _lib.nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, _on_frame_sent)
    return callbacks


def _make_option():
    pointer = ffi.new("nghttp2_option **")
    _check(_lib.nghttp2_option_new(pointer), "option_new")
    _lib.nghttp2_option_set_no_http_messaging(pointer[0], 1)
    return pointer[0]


# Shared by every session of the process (nghttp2 copies neither: they live as long as it).
_CALLBACKS = _make_callbacks()
_OPTION = _make_option()
_BODY_PROVIDER = ffi.new("nghttp2_data_provider *", {"read_callback": _read_body})
