"""The transport-neutral request/response values passed between the HTTP/2 server and the
service handlers, so the handlers can be tested without sockets and the server knows nothing
about APNs or FCM."""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Callable, TypeVar, Union


@dataclass(slots=True)
class Request:
    method: str
    path: str
    #: Every regular (non-pseudo) header in arrival order, names lower-case. A list, not a
    #: dict, because APNs must detect repeated headers.
    headers: list[tuple[str, str]]
    body: bytes
    #: Wall-clock arrival time in seconds.
    received_at: float
    #: Total body length, which can exceed ``len(body)`` when the server stopped buffering an
    #: oversized body (it only needs to know it was too large).
    body_length: int = 0


@dataclass(slots=True)
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    #: Seconds to wait before sending (scripted slow replies).
    delay: float = 0.0


def json_response(status: int, payload: object, headers: list[tuple[str, str]] | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return Response(status, [("content-type", "application/json; charset=UTF-8"), *(headers or [])], body)


#: A handler answers at once or, when it must ask another process first (per-token attempt
#: counters shared by worker processes), later through a future.
Outcome = Union[Response, "asyncio.Future[Response]"]


T = TypeVar("T")


def then(outcome: "T | asyncio.Future[T]", build: Callable[[T], Response]) -> Outcome:
    """Continue with ``build`` once a value that may still be pending is known."""
    if not isinstance(outcome, asyncio.Future):
        return build(outcome)
    result: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def done(source: "asyncio.Future[T]") -> None:
        if result.cancelled():
            return
        if source.exception() is not None:
            result.set_exception(source.exception())  # type: ignore[arg-type]
        else:
            result.set_result(build(source.result()))

    outcome.add_done_callback(done)
    return result
