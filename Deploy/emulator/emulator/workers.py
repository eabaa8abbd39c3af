"""``--workers N``: N serving processes behind one port, and one parent that owns the admin
API, the push log and the per-token attempt counters.

Python serves HTTP/2 on one core; this uses the others. The processes are forked before any
event loop exists. The parent accepts TCP connections and hands each to the next worker in
turn (the descriptor travels over a Unix socket, SCM_RIGHTS); the worker does TLS and HTTP/2.
Round-robin, rather than SO_REUSEPORT, because load tests open few connections and the
kernel's hash then spread them unevenly (measured 3:1 with four connections, halving
throughput). Each worker also talks to the parent over a socketpair carrying one JSON message
per line (``channel.Peer``):

* worker -> parent: pushes (queued on the channel *before* their 200 is written),
  ``attempt`` (ask for the next attempt number of a ``fail_times`` token), ``channel`` (look a
  broadcast channel up: the parent owns the registry and serves the channel-management port
  itself), ``ready``;
* parent -> worker: ``sync`` (reply with counters), ``reset``, ``rotate`` (new access-token
  secret); every request is answered with ``reply`` carrying the same ``id``.

Because a channel is FIFO and a push is queued on it before the client can see its 200 (every
later line, a ``sync`` reply included, goes out behind it), a ``sync`` round trip to every
worker guarantees the parent holds every push a client has seen accepted: ``/pushes`` and
``/stats`` are exact, not eventually consistent. Pushes from different workers are numbered in
arrival-time order (``_PushMerger``), so a client that sends one push after another sees them
in that order. ``--fast`` sends no pushes at all (counts travel with ``sync``).
"""
from __future__ import annotations

import asyncio
import base64
import os
import signal
import socket
import time
from typing import Callable

from .admin import AdminServer
from .app import (announce, bind_socket, build_channel_service, build_router, install_stop_signals,
                  withdraw)
from .certs import TlsFiles
from .channel import Peer
from .channels import ChannelRegistry
from .config import Credentials, Settings
from .logs import log, short_token
from .oauth import AccessTokens
from .records import PushLog, PushRecord, Stats
from .rules import AttemptCounter
from .server import Http2Connection, make_tls_context

WORKER_READY_TIMEOUT = 10.0
SHUTDOWN_GRACE = 3.0


# -- worker side ----------------------------------------------------------------------------------

class WorkerState:
    """``LocalState``'s interface for a worker: counters stay local (collected by ``sync``),
    pushes and attempt numbers belong to the parent."""

    def __init__(self, settings: Settings, parent: Peer) -> None:
        self.settings = settings
        self.stats = Stats()
        self._parent = parent

    def accept(self, service: str, build_record: Callable[[], PushRecord]) -> None:
        self.stats.accept(service)
        if not self.settings.fast:
            record = build_record()
            self._parent.send_push(record.received_at, record.to_json_text())

    def next_attempt(self, key: str) -> "asyncio.Future[int]":
        reply = self._parent.call("attempt", key=key)
        result: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def done(source: asyncio.Future) -> None:
            if source.exception() is not None:
                result.set_exception(source.exception())  # type: ignore[arg-type]
            else:
                result.set_result(source.result()["n"])

        reply.add_done_callback(done)
        return result

    def lookup_channel(self, bundle: str, channel_id: str) -> "asyncio.Future[dict | None]":
        reply = self._parent.call("channel", bundle=bundle, channel_id=channel_id)
        result: asyncio.Future[dict | None] = asyncio.get_running_loop().create_future()

        def done(source: asyncio.Future) -> None:
            if source.exception() is not None:
                result.set_exception(source.exception())  # type: ignore[arg-type]
            else:
                result.set_result(source.result()["channel"])

        reply.add_done_callback(done)
        return result

    def outcome(self, service: str, status: int, reason: str, token: str | None) -> None:
        self.stats.count(service, status, reason)
        if self.settings.log_requests:
            log("request", service=service, status=status, reason=reason or None, token=short_token(token))

    def reset(self) -> None:
        self.stats.reset()


async def _worker_main(index: int, settings: Settings, credentials: Credentials, tls: TlsFiles, port: int,
                       handoff_sock: socket.socket, channel_sock: socket.socket, secret: bytes) -> int:
    loop = asyncio.get_running_loop()
    # Ctrl-C reaches the whole process group: the parent alone reacts and stops the workers
    # with SIGTERM, so that it never mistakes their exit for a crash.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    tokens = AccessTokens(secret, settings.access_token_ttl)
    state: WorkerState | None = None

    def on_message(peer: Peer, message: dict) -> None:
        assert state is not None
        if message["op"] == "sync":
            peer.reply(message, stats=state.stats.snapshot())
        elif message["op"] == "reset":
            state.reset()
            peer.reply(message)
        elif message["op"] == "rotate":
            tokens.rotate(base64.b64decode(message["secret"]))
            peer.reply(message)

    parent = Peer(on_message)
    await parent.attach(channel_sock)
    state = WorkerState(settings, parent)
    router = build_router(settings, credentials, state, tokens, port, index)  # type: ignore[arg-type]
    connections: set[Http2Connection] = set()
    tls_context = make_tls_context(tls.server_cert, tls.server_key)

    def adopt_connections() -> None:
        try:
            _, fds, _, _ = socket.recv_fds(handoff_sock, 16, 64)
        except BlockingIOError:
            return
        for fd in fds:
            client = socket.socket(fileno=fd)
            client.setblocking(False)
            loop.create_task(_adopt(loop, client, tls_context,
                                    lambda: Http2Connection(router, settings, connections)))

    handoff_sock.setblocking(False)
    loop.add_reader(handoff_sock.fileno(), adopt_connections)
    parent.send({"op": "ready", "pid": os.getpid()})
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait([stopped, parent.closed], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    loop.remove_reader(handoff_sock.fileno())
    await asyncio.gather(*(c.shutdown(SHUTDOWN_GRACE) for c in list(connections)))
    parent.close()
    return 0


async def _adopt(loop: asyncio.AbstractEventLoop, client: socket.socket, tls_context: object,
                 factory: Callable[[], Http2Connection]) -> None:
    """Run the TLS handshake and HTTP/2 on a connection the parent accepted."""
    try:
        await loop.connect_accepted_socket(factory, client, ssl=tls_context)  # type: ignore[arg-type]
    except (OSError, ConnectionError) as error:  # handshake failures are the client's problem
        log("tls_handshake_failed", level="warning", error=str(error))
        client.close()


# -- parent side ----------------------------------------------------------------------------------

class _Worker:
    def __init__(self, index: int, pid: int, peer: Peer, handoff: socket.socket) -> None:
        self.index, self.pid, self.peer, self.handoff = index, pid, peer, handoff
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        #: Between sending ``reset`` and its reply, pushes from this worker predate the reset.
        self.discarding = False


class _PushMerger:
    """Numbers pushes from several workers in arrival-time order. Pushes wait here until a
    ``sync`` (all of them) or until they are ``SETTLE_SECONDS`` old (the periodic flush), by
    which time any earlier push from another worker has long crossed its channel."""

    SETTLE_SECONDS = 0.1

    def __init__(self, push_log: PushLog) -> None:
        self._log = push_log
        self._pending: list[tuple[float, str]] = []

    def add(self, line: bytes) -> None:
        stamp, _, record_json = line.partition(b" ")
        self._pending.append((float(stamp), record_json.decode()))

    def publish(self, settled_only: bool = False) -> None:
        if not self._pending:
            return
        if settled_only:
            horizon = time.time() - self.SETTLE_SECONDS
            batch = [p for p in self._pending if p[0] <= horizon]
            self._pending = [p for p in self._pending if p[0] > horizon]
        else:
            batch, self._pending = self._pending, []
        batch.sort(key=lambda pending: pending[0])
        for _, record_json in batch:
            self._log.append(record_json)

    def clear(self) -> None:
        self._pending.clear()


class ParentBackend:
    """The admin API's view with workers: parent-held pushes, counters collected by ``sync``."""

    def __init__(self, settings: Settings, workers: list[_Worker], push_log: PushLog, merger: _PushMerger,
                 attempts: AttemptCounter, tokens: AccessTokens, channels: ChannelRegistry,
                 own_stats: Stats) -> None:
        self._settings, self._workers, self._log, self._merger = settings, workers, push_log, merger
        self._attempts, self._tokens = attempts, tokens
        #: The parent's own share: the channel registry and the management port's counters.
        self._channels, self._own_stats = channels, own_stats

    async def _sync(self) -> list[dict]:
        replies = await asyncio.gather(*(w.peer.call("sync") for w in self._workers))
        self._merger.publish()
        return [reply["stats"] for reply in replies]

    async def pushes(self, since: int, limit: int) -> dict:
        await self._sync()
        page = self._log.since(since, limit)
        page["recording"] = "counts-only" if self._settings.fast else "full"
        return page

    async def stats(self) -> dict:
        report = Stats.report([*await self._sync(), self._own_stats.snapshot()])
        report["workers"] = len(self._workers)
        return report

    async def reset(self) -> None:
        self._log.reset()
        self._merger.clear()
        self._attempts.reset()
        self._channels.reset()
        self._own_stats.reset()
        for worker in self._workers:
            worker.discarding = True
        replies = [w.peer.call("reset") for w in self._workers]
        for worker, reply in zip(self._workers, replies):
            await reply
            worker.discarding = False

    async def channels(self) -> list[dict]:
        return self._channels.all()

    async def revoke_tokens(self) -> None:
        secret = self._tokens.rotate()
        encoded = base64.b64encode(secret).decode()
        await asyncio.gather(*(w.peer.call("rotate", secret=encoded) for w in self._workers))


async def _parent_main(settings: Settings, credentials: Credentials, tls: TlsFiles, listener: socket.socket,
                       children: list[tuple[int, int, socket.socket, socket.socket]], secret: bytes) -> int:
    stop = install_stop_signals(asyncio.get_running_loop())
    started_at = time.time()
    push_log = PushLog(settings.max_records, None if settings.fast else settings.record_file)
    merger = _PushMerger(push_log)
    attempts = AttemptCounter()
    tokens = AccessTokens(secret, settings.access_token_ttl)
    channels = ChannelRegistry(settings.max_channels)
    own_stats = Stats()
    workers: list[_Worker] = []
    failed = False

    def make_handlers(worker_index: int) -> tuple[Callable[[Peer, dict], None], Callable[[bytes], None]]:
        def on_push(line: bytes) -> None:
            if not workers[worker_index].discarding:
                merger.add(line)

        def on_message(peer: Peer, message: dict) -> None:
            worker = workers[worker_index]
            op = message["op"]
            if op == "attempt":
                peer.reply(message, n=attempts.next_attempt(message["key"]))
            elif op == "channel":
                channel = channels.get(message["bundle"], message["channel_id"])
                peer.reply(message, channel=None if channel is None else channel.to_json())
            elif op == "ready" and not worker.ready.done():
                worker.ready.set_result(None)
        return on_message, on_push

    for index, pid, channel_sock, handoff in children:
        peer = Peer(*make_handlers(index))
        workers.append(_Worker(index, pid, peer, handoff))
        await peer.attach(channel_sock)

    def on_worker_lost(worker: _Worker) -> None:
        nonlocal failed
        if not stop.is_set():
            log("worker_died", level="error", worker=worker.index, pid=worker.pid)
            failed = True
            stop.set()

    for worker in workers:
        worker.peer.closed.add_done_callback(lambda _, w=worker: on_worker_lost(w))
    try:
        await asyncio.wait_for(asyncio.gather(*(w.ready for w in workers)), WORKER_READY_TIMEOUT)
    except asyncio.TimeoutError:
        log("workers_not_ready", level="error")
        failed = True
        stop.set()
    backend = ParentBackend(settings, workers, push_log, merger, attempts, tokens, channels, own_stats)
    admin = await asyncio.start_server(AdminServer(backend, started_at).serve_client,
                                       settings.host, settings.admin_port)
    channel_service = build_channel_service(settings, credentials, channels,
                                            lambda status, reason: own_stats.count("channels", status, reason))
    channel_connections: set[Http2Connection] = set()
    channels_server = await asyncio.get_running_loop().create_server(
        lambda: Http2Connection(channel_service, settings, channel_connections),
        sock=bind_socket(settings.host, settings.channels_port),
        ssl=make_tls_context(tls.server_cert, tls.server_key))
    turn = 0

    def hand_off_connections() -> None:
        nonlocal turn
        while True:
            try:
                client, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # e.g. EMFILE: keep serving the connections we have
                log("accept_failed", level="warning", error=str(error))
                return
            with client:
                worker = workers[turn % len(workers)]
                turn += 1
                try:
                    socket.send_fds(worker.handoff, [b"c"], [client.fileno()])
                except OSError as error:  # that worker is gone; on_worker_lost stops the emulator
                    log("handoff_failed", level="error", worker=worker.index, error=str(error))

    loop = asyncio.get_running_loop()
    loop.add_reader(listener.fileno(), hand_off_connections)
    info_path = announce(settings, tls, listener.getsockname()[1], admin.sockets[0].getsockname()[1],
                         channels_server.sockets[0].getsockname()[1])

    async def publish_settled() -> None:
        while True:
            await asyncio.sleep(_PushMerger.SETTLE_SECONDS)
            merger.publish(settled_only=True)

    publisher = asyncio.ensure_future(publish_settled())
    await stop.wait()
    publisher.cancel()
    log("stopping", workers=len(workers))
    loop.remove_reader(listener.fileno())
    listener.close()
    admin.close()
    channels_server.close()
    await asyncio.gather(*(c.shutdown(SHUTDOWN_GRACE) for c in list(channel_connections)))
    for worker in workers:
        try:
            os.kill(worker.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + SHUTDOWN_GRACE + 2.0
    remaining = {w.pid for w in workers}
    while remaining and time.monotonic() < deadline:
        for pid in list(remaining):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                remaining.discard(pid)
        await asyncio.sleep(0.02)
    for pid in remaining:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    merger.publish()
    push_log.close()
    withdraw(info_path)
    log("stopped")
    return 1 if failed else 0


def run_workers(settings: Settings, credentials: Credentials, tls: TlsFiles,
                run_loop: Callable[..., int]) -> int:
    """Fork the workers (before any event loop exists), then run the parent loop."""
    listener = bind_socket(settings.host, settings.port)
    listener.listen(1024)
    port = listener.getsockname()[1]
    secret = os.urandom(32)
    children: list[tuple[int, int, socket.socket, socket.socket]] = []
    for index in range(settings.workers):
        parent_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        handoff_parent, handoff_worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # worker
            listener.close()
            parent_end.close()
            handoff_parent.close()
            for _, _, channel, handoff in children:
                channel.close()
                handoff.close()
            code = 1
            try:
                code = run_loop(_worker_main(index, settings, credentials, tls, port, handoff_worker,
                                             worker_end, secret))
            finally:
                os._exit(code)
        worker_end.close()
        handoff_worker.close()
        children.append((index, pid, parent_end, handoff_parent))
    return run_loop(_parent_main(settings, credentials, tls, listener, children, secret))
