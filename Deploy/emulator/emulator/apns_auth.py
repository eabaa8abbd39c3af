"""APNs token authentication, shared by the three Apple services the emulator serves: device
pushes (``/3/device``), broadcast pushes (``/4/broadcasts``) and channel management
(``/1/apps``). All three accept the same ES256 provider token and bind a connection to one team.

Also the rejection type and answer shape those services share: Apple's ``{"reason": ...}``
bodies with the request id header each API uses (``apns-id`` for device pushes,
``apns-request-id`` for broadcast and channel management).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from .config import Credentials, Settings
from .http_types import Response
from .jwt_verify import BoundedCache, MalformedToken, es256_signature_valid, parse_jws

PROVIDER_TOKEN_MAX_AGE = 3600  # s: older iat -> ExpiredProviderToken
PROVIDER_TOKEN_MAX_SKEW = 60   # s: iat this far in the future -> InvalidProviderToken

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
#: A bundle id as it may appear in a topic or a path.
BUNDLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class Reject(Exception):
    """An APNs refusal. ``detail`` is set only for the emulator's own stricter-than-Apple
    reasons, so that a failing test names the rule that was broken."""

    def __init__(self, status: int, reason: str, detail: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.detail = status, reason, detail


def apns_error(status: int, reason: str, id_header: tuple[str, str],
               extra: list[tuple[str, str]] | None = None, timestamp: int | None = None,
               detail: str | None = None, delay: float = 0.0) -> Response:
    body: dict = {"reason": reason}
    if timestamp is not None:
        body["timestamp"] = timestamp
    if detail is not None:
        body["detail"] = detail
    return Response(status, [id_header, ("content-type", "application/json"), *(extra or [])],
                    json.dumps(body, separators=(",", ":")).encode(), delay)


def collect_headers(request_headers: list[tuple[str, str]]) -> tuple[dict[str, str], bool]:
    """The headers as a dict, and whether any was repeated (Apple: ``DuplicateHeaders``)."""
    headers: dict[str, str] = {}
    duplicated = False
    for name, value in request_headers:
        if name in headers:
            duplicated = True
        headers[name] = value
    return headers, duplicated


class ConnectionAuth:
    """What APNs remembers per HTTP/2 connection: the team it is bound to and the provider
    token in use, to enforce "at most one new token per ``--jwt-min-renewal-seconds``"."""

    __slots__ = ("team_id", "token", "changed_at")

    def __init__(self) -> None:
        self.team_id: str | None = None
        self.token: str | None = None
        self.changed_at = 0.0


@dataclass(frozen=True, slots=True)
class _Verified:
    team_id: str
    issued_at: int


class ProviderAuth:
    """Checks ``authorization: bearer <JWT>`` and returns the team id, or raises ``Reject``."""

    def __init__(self, settings: Settings, credentials: Credentials) -> None:
        self._settings = settings
        self._credentials = credentials
        # JWT string -> verified claims, or the rejection reason: a signature is checked once.
        self._verified: BoundedCache[_Verified | str] = BoundedCache()

    def topics(self, team_id: str) -> frozenset[str]:
        """The bundle ids the team's keys may push to."""
        return self._credentials.team_topics.get(team_id, frozenset())

    def authenticate(self, authorization: str | None, connection: ConnectionAuth) -> str:
        if authorization is None:
            raise Reject(403, "MissingProviderToken")
        scheme, _, jwt = authorization.partition(" ")
        jwt = jwt.strip()
        if scheme.lower() != "bearer" or not jwt:
            raise Reject(403, "InvalidProviderToken")
        verified = self._verified.get(jwt)
        if verified is None:
            verified = self._verify(jwt)
            self._verified.put(jwt, verified)
        if isinstance(verified, str):
            raise Reject(403, verified)
        now = time.time()
        if now - verified.issued_at > PROVIDER_TOKEN_MAX_AGE:
            raise Reject(403, "ExpiredProviderToken")
        if verified.issued_at - now > PROVIDER_TOKEN_MAX_SKEW:
            raise Reject(403, "InvalidProviderToken")
        if connection.team_id is not None and connection.team_id != verified.team_id:
            # A connection is bound to the team of its first token: use one pool per team.
            raise Reject(403, "UnrelatedKeyIdInToken")
        if connection.token != jwt:
            monotonic = time.monotonic()
            if (connection.token is not None
                    and monotonic - connection.changed_at < self._settings.jwt_min_renewal_seconds):
                raise Reject(429, "TooManyProviderTokenUpdates")
            connection.token, connection.changed_at = jwt, monotonic
            connection.team_id = verified.team_id
        return verified.team_id

    def _verify(self, jwt: str) -> _Verified | str:
        try:
            jws = parse_jws(jwt)
        except MalformedToken:
            return "InvalidProviderToken"
        key_id, team_id, issued_at = jws.header.get("kid"), jws.claims.get("iss"), jws.claims.get("iat")
        if (jws.header.get("alg") != "ES256" or not isinstance(key_id, str)
                or not isinstance(team_id, str) or type(issued_at) is not int):
            return "InvalidProviderToken"
        key = self._credentials.apns_keys.get((team_id, key_id))
        if key is None or not es256_signature_valid(key.public_key, jws):
            return "InvalidProviderToken"
        return _Verified(team_id, issued_at)
