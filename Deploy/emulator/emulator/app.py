"""Wiring: builds the services of one serving process and binds the listening sockets.

Kept apart from ``__main__`` so that worker processes build exactly the same stack.
"""
from __future__ import annotations

import socket

from .apns import ApnsService
from .config import Credentials, Settings
from .fcm import FcmService
from .oauth import AccessTokens, OAuthService
from .rules import FaultInjector
from .server import Router
from .state import LocalState


def build_router(settings: Settings, credentials: Credentials, state: LocalState, tokens: AccessTokens,
                 listen_port: int, worker_index: int = 0) -> Router:
    seed = None if settings.seed is None else settings.seed + worker_index
    faults = FaultInjector(settings.fail_rate, seed)
    return Router(ApnsService(settings, credentials, state, faults),
                  FcmService(settings, credentials, state, tokens, faults),
                  OAuthService(settings, credentials, state, tokens, listen_port),
                  state)


def bind_socket(host: str, port: int, reuse_port: bool) -> socket.socket:
    """A bound TCP socket; with ``reuse_port`` several processes can each listen on the same
    port and the kernel spreads connections across them."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock
