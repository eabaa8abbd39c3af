"""``python -m emulator``: parse flags, prepare TLS files, serve until SIGTERM/SIGINT.

On start one JSON line goes to stdout (ports, CA path, pid) and the same object to
``<state-dir>/emulator.json``, so scripts can find a running emulator; it is removed on a
clean exit.
"""
from __future__ import annotations

import signal
import argparse
import asyncio
import sys
import time
from pathlib import Path

from .admin import AdminServer, LocalBackend
from .apns import apns_rules
from .fcm import fcm_rules
from .app import (announce, bind_socket, build_channel_service, build_router, install_stop_signals,
                  withdraw)
from .certs import TlsFiles, ensure_tls_files
from .config import ConfigError, Credentials, Settings, default_state_dir, load_credentials
from .logs import log
from .oauth import AccessTokens
from .server import Http2Connection, make_tls_context
from .state import LocalState

SHUTDOWN_GRACE = 3.0
DEFAULT_CONFIG_NAME = Path("credentials") / "emulator-config.json"


def parse_args(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(prog="emulator",
                                     description="Local APNs + FCM + OAuth2 emulator (see README.md).")
    parser.add_argument("--port", type=int, default=8443, help="HTTP/2+TLS port (0: pick a free one)")
    parser.add_argument("--admin-port", type=int, default=8444, help="admin HTTP/1.1 port (0: free)")
    parser.add_argument("--channels-port", type=int, default=0,
                        help="broadcast channel-management HTTP/2+TLS port (default 0: a free one, "
                             "announced in the start line)")
    parser.add_argument("--max-channels", type=int, default=10_000,
                        help="broadcast channels per bundle id (Apple: 10,000)")
    parser.add_argument("--state-dir", type=Path, default=default_state_dir(),
                        help="CA, server certificate and emulator.json "
                             "(default: ${PUSHD_STATE_DIR:-~/.pushd-local}/emulator)")
    parser.add_argument("--config", type=Path, default=None,
                        help=f"credentials/rules JSON (default: <state-dir>/{DEFAULT_CONFIG_NAME}"
                             " if present)")
    parser.add_argument("--max-streams", type=int, default=1000, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    parser.add_argument("--jwt-min-renewal-seconds", type=float, default=1200.0,
                        help="a new APNs JWT on a connection sooner than this -> 429 "
                             "TooManyProviderTokenUpdates")
    parser.add_argument("--access-token-ttl", type=int, default=3600, help="OAuth2 access token lifetime (s)")
    parser.add_argument("--record-file", type=Path, default=None, help="append accepted pushes as NDJSON")
    parser.add_argument("--max-records", type=int, default=1_000_000, help="accepted pushes kept in memory")
    parser.add_argument("--fail-rate", type=float, default=0.0,
                        help="fraction of otherwise-good requests answered 429/500/503 with retry-after: 1")
    parser.add_argument("--seed", type=int, default=None, help="seed for --fail-rate")
    parser.add_argument("--slow-delay", type=float, default=2.0, help="delay (s) of the default slow rules")
    parser.add_argument("--fast", action="store_true",
                        help="throughput mode: skip APNs JSON parsing and header re-validation, count only")
    parser.add_argument("--workers", type=int, default=1,
                        help="serving processes; the parent hands connections out round-robin")
    parser.add_argument("--log-requests", action="store_true", help="log every answered request")
    args = parser.parse_args(argv)
    if not 0.0 <= args.fail_rate <= 1.0:
        parser.error("--fail-rate must be within 0..1")
    if args.workers < 1 or args.max_streams < 1 or args.max_records < 1 or args.max_channels < 1:
        parser.error("--workers, --max-streams, --max-records and --max-channels must be positive")
    config = args.config
    if config is None and (args.state_dir / DEFAULT_CONFIG_NAME).exists():
        config = args.state_dir / DEFAULT_CONFIG_NAME
    return Settings(port=args.port, admin_port=args.admin_port, state_dir=args.state_dir.resolve(),
                    config_path=config.resolve() if config else None, max_streams=args.max_streams,
                    jwt_min_renewal_seconds=args.jwt_min_renewal_seconds,
                    access_token_ttl=args.access_token_ttl,
                    record_file=args.record_file.resolve() if args.record_file else None,
                    max_records=args.max_records, fail_rate=args.fail_rate, seed=args.seed,
                    slow_delay=args.slow_delay, fast=args.fast, workers=args.workers,
                    log_requests=args.log_requests, channels_port=args.channels_port,
                    max_channels=args.max_channels)


async def serve_single(settings: Settings, credentials: Credentials, tls: TlsFiles) -> int:
    loop = asyncio.get_running_loop()
    stop = install_stop_signals(loop)
    started_at = time.time()
    sock = bind_socket(settings.host, settings.port)
    port = sock.getsockname()[1]
    state = LocalState(settings)
    tokens = AccessTokens(None, settings.access_token_ttl)
    router = build_router(settings, credentials, state, tokens, port)
    connections: set[Http2Connection] = set()
    server = await loop.create_server(lambda: Http2Connection(router, settings, connections),
                                      sock=sock, ssl=make_tls_context(tls.server_cert, tls.server_key),
                                      backlog=1024)
    channel_service = build_channel_service(
        settings, credentials, state.channels,
        lambda status, reason: state.outcome("channels", status, reason, None))
    channels_server = await loop.create_server(
        lambda: Http2Connection(channel_service, settings, connections),
        sock=bind_socket(settings.host, settings.channels_port),
        ssl=make_tls_context(tls.server_cert, tls.server_key))
    admin = await asyncio.start_server(AdminServer(LocalBackend(state, tokens), started_at).serve_client,
                                       settings.host, settings.admin_port)
    info_path = announce(settings, tls, port, admin.sockets[0].getsockname()[1],
                         channels_server.sockets[0].getsockname()[1])
    await stop.wait()
    log("stopping", connections=len(connections))
    server.close()
    channels_server.close()
    admin.close()
    await asyncio.gather(*(c.shutdown(SHUTDOWN_GRACE) for c in list(connections)))
    state.log.close()
    withdraw(info_path)
    log("stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    # A parent may have started us with SIGTERM/SIGINT blocked (Swift's Foundation.Process
    # passes on the spawning thread's signal mask): unblock them, or we could never be stopped.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    settings = parse_args(argv)
    try:
        credentials = load_credentials(settings.config_path)
        apns_rules(settings, credentials)  # refuse bad rules now, not in a worker
        fcm_rules(settings, credentials)
    except ConfigError as error:
        log("config_error", level="error", error=str(error))
        return 2
    if settings.config_path is None:
        log("no_credentials", level="warning",
            hint="every APNs JWT and OAuth assertion will be refused; see make_credentials.py")
    tls = ensure_tls_files(settings.state_dir)
    if settings.workers > 1:
        from .workers import run_workers
        return run_workers(settings, credentials, tls, run_loop)
    return run_loop(serve_single(settings, credentials, tls))


def run_loop(main_coroutine) -> int:  # type: ignore[no-untyped-def]
    """Run on uvloop when installed (faster event loop and TLS), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main_coroutine)
    return uvloop.run(main_coroutine)


if __name__ == "__main__":
    sys.exit(main())
