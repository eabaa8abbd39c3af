"""A minimal blocking HTTP/2 client on ``h2`` for what httpx does not expose: the server's
SETTINGS, hundreds of streams in flight on one connection, flow-controlled large bodies,
stream resets and GOAWAY."""
from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events


@dataclass
class Reply:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    done: bool = False
    reset: bool = False


class RawH2Client:
    def __init__(self, host: str, port: int, tls: ssl.SSLContext, alpn: list[str] | None = None) -> None:
        tls.set_alpn_protocols(alpn or ["h2"])
        self.sock = tls.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)
        # Outbound checks off, so tests can send malformed requests on purpose.
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8", validate_outbound_headers=False,
            normalize_outbound_headers=False))
        self.replies: dict[int, Reply] = {}
        self.remote_settings_seen = False
        self.terminated: h2.events.ConnectionTerminated | None = None
        self._pending_bodies: dict[int, bytes] = {}
        self.conn.initiate_connection()
        self._flush()

    def close(self) -> None:
        self.sock.close()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self) -> bool:
        """Read once and process events; False when the server closed the connection."""
        data = self.sock.recv(65536)
        if not data:
            return False
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                self.remote_settings_seen = True
            elif isinstance(event, h2.events.ResponseReceived):
                reply = self.replies[event.stream_id]
                reply.headers = dict(event.headers)
                reply.status = int(reply.headers[":status"])
            elif isinstance(event, h2.events.DataReceived):
                self.replies[event.stream_id].body += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.replies[event.stream_id].done = True
            elif isinstance(event, h2.events.StreamReset):
                self.replies[event.stream_id].reset = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.terminated = event
        self._send_pending_bodies()
        self._flush()
        return True

    def server_settings(self) -> h2.settings.Settings:
        while not self.remote_settings_seen:
            assert self.pump(), "connection closed before SETTINGS"
        return self.conn.remote_settings

    def request(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> int:
        stream_id = self.conn.get_next_available_stream_id()
        self.replies[stream_id] = Reply()
        self.conn.send_headers(stream_id, [(":method", method), (":scheme", "https"), (":authority", "localhost"),
                                           (":path", path), *headers], end_stream=not body)
        if body:
            self._pending_bodies[stream_id] = body
            self._send_pending_bodies()
        self._flush()
        return stream_id

    def _send_pending_bodies(self) -> None:
        """Send as much body as the server's flow-control windows allow."""
        for stream_id, body in list(self._pending_bodies.items()):
            while body:
                window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
                if window <= 0:
                    break
                chunk, body = body[:window], body[window:]
                self.conn.send_data(stream_id, chunk, end_stream=not body)
            if body:
                self._pending_bodies[stream_id] = body
            else:
                del self._pending_bodies[stream_id]

    def reset(self, stream_id: int) -> None:
        self.conn.reset_stream(stream_id)
        self._flush()

    def wait(self, *stream_ids: int) -> list[Reply]:
        while not all(self.replies[s].done or self.replies[s].reset for s in stream_ids):
            assert self.pump(), "connection closed with streams pending"
        return [self.replies[s] for s in stream_ids]
