"""Wiring shared by single-process and worker modes: the services of one serving process,
the listening sockets, the start announcement and the stop signals.

Kept apart from ``__main__`` so that worker processes build exactly the same stack.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Callable

from .apns import ApnsService
from .apns_auth import ProviderAuth
from .broadcast import BroadcastService
from .certs import TlsFiles
from .channels import ChannelRegistry, ChannelService
from .config import Credentials, Settings
from .fcm import FcmService
from .logs import log
from .oauth import AccessTokens, OAuthService
from .rules import FaultInjector
from .router import Router
from .state import ServiceState


def build_router(settings: Settings, credentials: Credentials, state: ServiceState, tokens: AccessTokens,
                 listen_port: int, worker_index: int = 0) -> Router:
    seed = None if settings.seed is None else settings.seed + worker_index
    faults = FaultInjector(settings.fail_rate, seed)
    auth = ProviderAuth(settings, credentials)
    return Router(ApnsService(settings, credentials, state, faults, auth),
                  BroadcastService(settings, state, faults, auth),
                  FcmService(settings, credentials, state, tokens, faults),
                  OAuthService(settings, credentials, state, tokens, listen_port),
                  state)


def build_channel_service(settings: Settings, credentials: Credentials, registry: ChannelRegistry,
                          count: Callable[[int, str], None]) -> ChannelService:
    """The channel-management API, served on its own port by whichever process owns the
    registry (the only process, or the parent with ``--workers``)."""
    return ChannelService(registry, ProviderAuth(settings, credentials), count)


def bind_socket(host: str, port: int) -> socket.socket:
    """A bound, non-blocking TCP socket (port 0: the kernel picks a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


def announce(settings: Settings, tls: TlsFiles, port: int, admin_port: int, channels_port: int) -> Path:
    """Print the start line and write ``emulator.json`` (atomically, for pollers)."""
    info = {"pid": os.getpid(), "host": settings.host, "port": port, "admin_port": admin_port,
            "channels_port": channels_port,
            "url": f"https://{settings.host}:{port}", "admin_url": f"http://{settings.host}:{admin_port}",
            "channels_url": f"https://{settings.host}:{channels_port}",
            "ca": str(tls.ca_cert), "state_dir": str(settings.state_dir),
            "config": str(settings.config_path) if settings.config_path else None,
            "fast": settings.fast, "workers": settings.workers, "max_streams": settings.max_streams}
    line = json.dumps(info, separators=(",", ":"))
    path = settings.state_dir / "emulator.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(line + "\n")
    temporary.replace(path)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    log("started", **info)
    return path


def withdraw(info_path: Path) -> None:
    """Remove ``emulator.json`` on exit unless a newer emulator already replaced it."""
    try:
        if json.loads(info_path.read_text()).get("pid") == os.getpid():
            info_path.unlink()
    except (OSError, ValueError):
        pass


def install_stop_signals(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
