"""Targeted speed-ups for the pure-Python ``hpack`` decoder and ``hyperframe`` frames that ``h2``
uses.

HTTP/2 clients never add ``authorization`` to the HPACK dynamic table (RFC 7541 §7.1.3: it is
a sensitive header), so every APNs request carries its ~200-byte provider token as a fresh
Huffman-coded literal, and ``hpack`` decodes it nibble by nibble in Python: measured as the
largest single cost per request. The token is identical on every request of a connection for
up to an hour, so memoising the (pure, deterministic) decoder removes that cost; repeated
``:path`` literals benefit too. hpack's per-header debug logging calls are replaced by a no-op
unless debug logging is actually enabled for ``hpack``.

h2 formats every frame it receives for its trace log (``repr(frame)``) whether or not anything
logs it, and a frame's ``repr`` serializes its body again: measured as 5% of the emulator's CPU
under load. The emulator never gives h2 a logger, so frames get a short ``repr`` instead.
"""
from __future__ import annotations

import functools
import logging

import hpack.hpack as _hpack
import hyperframe.frame as _frame

HUFFMAN_CACHE_SIZE = 4096


class _SilentLogger:
    def debug(self, *args: object, **kwargs: object) -> None:
        pass


def install() -> None:
    if getattr(_hpack, "_pushd_speedups", False):
        return
    _hpack.decode_huffman = functools.lru_cache(maxsize=HUFFMAN_CACHE_SIZE)(_hpack.decode_huffman)
    if not logging.getLogger(_hpack.__name__).isEnabledFor(logging.DEBUG):
        _hpack.log = _SilentLogger()  # type: ignore[assignment]
    _frame.Frame.__repr__ = _short_repr  # type: ignore[method-assign]
    _hpack._pushd_speedups = True  # type: ignore[attr-defined]


def _short_repr(frame: _frame.Frame) -> str:
    return f"{type(frame).__name__}(stream_id={frame.stream_id})"
