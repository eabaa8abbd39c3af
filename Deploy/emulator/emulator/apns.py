"""APNs provider API: ``POST /3/device/<token>`` with token (JWT) authentication.

Requests are checked in a fixed order (documented in README.md) and rejected with Apple's
status codes and ``{"reason": ...}`` bodies; every answer carries an ``apns-id``. Only then do
the token-prefix rules and random faults apply, as the real service answers about the device
only for a well-formed, authenticated request.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass

from .config import Credentials, Settings
from .http_types import Outcome, Request, Response, then
from .jwt_verify import BoundedCache, MalformedToken, es256_signature_valid, parse_jws
from .records import PushRecord
from .rules import FaultInjector, Rule, RuleBook, default_apns_rules
from .state import ServiceState

DEVICE_PATH = "/3/device/"
PROVIDER_TOKEN_MAX_AGE = 3600  # s: older iat -> ExpiredProviderToken
PROVIDER_TOKEN_MAX_SKEW = 60   # s: iat this far in the future -> InvalidProviderToken
PAYLOAD_LIMIT = 4096
VOIP_PAYLOAD_LIMIT = 5120

#: apns-push-type -> the topic suffix Apple requires for it (None: not checked).
PUSH_TYPE_SUFFIX: dict[str, str | None] = {
    "alert": "", "background": "", "voip": ".voip", "pushtotalk": ".voip-ptt",
    "liveactivity": ".push-type.liveactivity", "complication": ".complication",
    "fileprovider": ".pushkit.fileprovider", "widgets": ".push-type.widgets",
    "controls": ".push-type.controls", "location": ".location-query", "mdm": None,
}
_SUFFIXES = sorted({s for s in PUSH_TYPE_SUFFIX.values() if s}, key=len, reverse=True)
_SUFFIX_TO_TYPE = {s: t for t, s in PUSH_TYPE_SUFFIX.items() if s}
#: Push types whose payload Apple parses as an ``aps`` dictionary.
_NEEDS_APS = frozenset({"alert", "background", "liveactivity", "widgets", "controls"})

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_HEX_TOKEN = re.compile(r"(?:[0-9a-fA-F]{2}){8,200}\Z")
_TOPIC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"}

#: Apple's status for each documented reason (lets a config rule name only the reason).
REASON_STATUS = {
    **dict.fromkeys(("BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId",
                     "BadPriority", "BadTopic", "DeviceTokenNotForTopic", "DuplicateHeaders",
                     "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic",
                     "PayloadEmpty", "TopicDisallowed"), 400),
    **dict.fromkeys(("BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken",
                     "Forbidden", "InvalidProviderToken", "MissingProviderToken",
                     "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken"), 403),
    "BadPath": 404, "MethodNotAllowed": 405, "ExpiredToken": 410, "Unregistered": 410,
    "PayloadTooLarge": 413, "TooManyProviderTokenUpdates": 429, "TooManyRequests": 429,
    "InternalServerError": 500, "ServiceUnavailable": 503, "Shutdown": 503,
}


def apns_rules(settings: Settings, credentials: Credentials) -> RuleBook:
    """Default rules plus the config's; raises ``ConfigError`` for a bad rule."""
    return RuleBook.from_config("apns", default_apns_rules(settings.slow_delay), credentials.rules,
                                REASON_STATUS.get)


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


class _Reject(Exception):
    def __init__(self, status: int, reason: str) -> None:
        self.status, self.reason = status, reason


class ApnsService:
    def __init__(self, settings: Settings, credentials: Credentials, state: ServiceState,
                 faults: FaultInjector) -> None:
        self._settings = settings
        self._credentials = credentials
        self._state = state
        self._faults = faults
        self.rules = apns_rules(settings, credentials)
        # JWT string -> verified claims, or the rejection reason: a signature is checked once.
        self._verified: BoundedCache[_Verified | str] = BoundedCache()

    # -- entry point -------------------------------------------------------------------------

    def handle(self, request: Request, connection: ConnectionAuth) -> Outcome:
        headers: dict[str, str] = {}
        duplicated = False
        for name, value in request.headers:
            if name in headers:
                duplicated = True
            headers[name] = value
        given_id = headers.get("apns-id")
        apns_id = given_id if given_id is not None and _UUID.match(given_id) else str(uuid.uuid4())
        token = request.path[len(DEVICE_PATH):]
        try:
            self._check(request, headers, duplicated, given_id, token, connection)
        except _Reject as rejection:
            return self._error(rejection.status, rejection.reason, apns_id, token)

        rule = self.rules.match(token)
        if rule is None:
            return self._succeed(request, headers, token, apns_id, 0.0)
        if rule.fail_times is None:
            return self._apply(rule, request, headers, token, apns_id, failing=rule.status != 200)
        attempt = self._state.next_attempt("apns:" + token.lower())
        return then(attempt, lambda n: self._apply(rule, request, headers, token, apns_id,
                                                   failing=n <= (rule.fail_times or 0)))

    # -- checks, in Apple's order as far as it is observable ----------------------------------

    def _check(self, request: Request, headers: dict[str, str], duplicated: bool,
               given_id: str | None, token: str, connection: ConnectionAuth) -> None:
        if request.method != "POST":
            raise _Reject(405, "MethodNotAllowed")
        if duplicated:
            raise _Reject(400, "DuplicateHeaders")
        if given_id is not None and not _UUID.match(given_id):
            raise _Reject(400, "BadMessageId")
        team_id = self._authenticate(headers.get("authorization"), connection)
        push_type = self._check_topic_and_type(headers, team_id)
        priority = headers.get("apns-priority", "10")
        if priority not in ("1", "5", "10"):
            raise _Reject(400, "BadPriority")
        if push_type == "background" and priority != "5":
            raise _Reject(400, "BadPriority")
        if push_type == "liveactivity" and priority == "1":
            raise _Reject(400, "BadPriority")
        expiration = headers.get("apns-expiration")
        if expiration is not None and not (expiration.isascii() and expiration.isdigit()):
            raise _Reject(400, "BadExpirationDate")
        collapse_id = headers.get("apns-collapse-id")
        if collapse_id is not None and len(collapse_id.encode("latin-1")) > 64:  # one char per byte
            raise _Reject(400, "BadCollapseId")
        if not token:
            raise _Reject(400, "MissingDeviceToken")
        if not _HEX_TOKEN.match(token):
            raise _Reject(400, "BadDeviceToken")
        self._check_payload(request, push_type)

    def _authenticate(self, authorization: str | None, connection: ConnectionAuth) -> str:
        if authorization is None:
            raise _Reject(403, "MissingProviderToken")
        scheme, _, jwt = authorization.partition(" ")
        jwt = jwt.strip()
        if scheme.lower() != "bearer" or not jwt:
            raise _Reject(403, "InvalidProviderToken")
        verified = self._verified.get(jwt)
        if verified is None:
            verified = self._verify(jwt)
            self._verified.put(jwt, verified)
        if isinstance(verified, str):
            raise _Reject(403, verified)
        now = time.time()
        if now - verified.issued_at > PROVIDER_TOKEN_MAX_AGE:
            raise _Reject(403, "ExpiredProviderToken")
        if verified.issued_at - now > PROVIDER_TOKEN_MAX_SKEW:
            raise _Reject(403, "InvalidProviderToken")
        if connection.team_id is not None and connection.team_id != verified.team_id:
            # A connection is bound to the team of its first token: use one pool per team.
            raise _Reject(403, "UnrelatedKeyIdInToken")
        if connection.token != jwt:
            monotonic = time.monotonic()
            if (connection.token is not None
                    and monotonic - connection.changed_at < self._settings.jwt_min_renewal_seconds):
                raise _Reject(429, "TooManyProviderTokenUpdates")
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

    def _check_topic_and_type(self, headers: dict[str, str], team_id: str) -> str:
        topic = headers.get("apns-topic")
        if topic is None:
            raise _Reject(400, "MissingTopic")
        if not _TOPIC.match(topic):
            raise _Reject(400, "BadTopic")
        suffix = next((s for s in _SUFFIXES if topic.endswith(s)), "")
        base = topic[: len(topic) - len(suffix)]
        if ".push-type." in base:
            raise _Reject(400, "BadTopic")  # an unknown push-type suffix
        declared = headers.get("apns-push-type")
        if declared is None:
            push_type = _SUFFIX_TO_TYPE.get(suffix, "alert")  # Apple infers it when absent
        elif declared in PUSH_TYPE_SUFFIX:
            push_type = declared
        else:
            raise _Reject(400, "InvalidPushType")
        if push_type == "mdm":
            return push_type  # MDM topics are certificate UIDs, not bundle ids
        if base not in self._credentials.team_topics.get(team_id, frozenset()):
            raise _Reject(400, "TopicDisallowed")
        if PUSH_TYPE_SUFFIX[push_type] != suffix:
            raise _Reject(400, "InvalidPushType")
        return push_type

    def _check_payload(self, request: Request, push_type: str) -> None:
        if request.body_length == 0:
            raise _Reject(400, "PayloadEmpty")
        limit = VOIP_PAYLOAD_LIMIT if push_type == "voip" else PAYLOAD_LIMIT
        if request.body_length > limit:
            raise _Reject(413, "PayloadTooLarge")
        if self._settings.fast:
            return
        # Apple documents no reason for a body that is not a JSON object: PayloadEmpty (no
        # usable payload) is the closest documented one.
        try:
            payload = json.loads(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Reject(400, "PayloadEmpty") from None
        if not isinstance(payload, dict):
            raise _Reject(400, "PayloadEmpty")
        aps = payload.get("aps")
        if (aps is None and push_type in _NEEDS_APS) or (aps is not None and not isinstance(aps, dict)):
            raise _Reject(400, "PayloadEmpty")

    # -- answers -------------------------------------------------------------------------------

    def _apply(self, rule: Rule, request: Request, headers: dict[str, str], token: str,
               apns_id: str, failing: bool) -> Response:
        if not failing:
            return self._succeed(request, headers, token, apns_id, rule.delay)
        timestamp = None
        if rule.timestamp == "now":
            timestamp = int(time.time() * 1000)
        elif rule.timestamp is not None:
            timestamp = int(rule.timestamp)
        extra = [("retry-after", str(rule.retry_after))] if rule.retry_after is not None else []
        return self._error(rule.status, rule.reason or "", apns_id, token, extra, timestamp, rule.delay)

    def _succeed(self, request: Request, headers: dict[str, str], token: str, apns_id: str,
                 delay: float) -> Response:
        fault = self._faults.pick()
        if fault is not None:
            return self._error(fault, _FAULT_REASONS[fault], apns_id, token, [("retry-after", "1")],
                               delay=delay)
        def build_record() -> PushRecord:
            recorded = {k: v for k, v in headers.items() if k.startswith("apns-")}
            recorded["apns-id"] = apns_id
            return PushRecord("apns", token, recorded, request.body.decode("utf-8", "replace"),
                              request.received_at)

        self._state.accept("apns", build_record)
        self._state.outcome("apns", 200, "", token)
        return Response(200, [("apns-id", apns_id)], b"", delay)

    def _error(self, status: int, reason: str, apns_id: str, token: str,
               extra: list[tuple[str, str]] | None = None, timestamp: int | None = None,
               delay: float = 0.0) -> Response:
        self._state.outcome("apns", status, reason, token)
        body = {"reason": reason} if timestamp is None else {"reason": reason, "timestamp": timestamp}
        return Response(status, [("apns-id", apns_id), ("content-type", "application/json"),
                                 *(extra or [])], json.dumps(body, separators=(",", ":")).encode(), delay)
