"""APNs provider API: ``POST /3/device/<token>`` with token (JWT) authentication.

Requests are checked in a fixed order (documented in README.md) and rejected with Apple's
status codes and ``{"reason": ...}`` bodies; every answer carries an ``apns-id``. Only then do
the token-prefix rules and random faults apply, as the real service answers about the device
only for a well-formed, authenticated request. Live Activity pushes (alert-style pushes to a
push-to-start or activity update token) get their ``aps`` checked per event
(``liveactivity.py``).
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass

from . import liveactivity
from .apns_auth import BUNDLE_ID, UUID, ConnectionAuth, ProviderAuth, Reject, apns_error, collect_headers
from .config import Credentials, Settings
from .http_types import Outcome, Request, Response, then
from .records import PushRecord
from .rules import FaultInjector, Rule, RuleBook, default_apns_rules
from .state import ServiceState

DEVICE_PATH = "/3/device/"
#: Apple has one host per environment; the emulator has one port, so a path prefix stands for
#: the sandbox host: ``<url>/sandbox/3/device/<token>`` is a development push.
SANDBOX_PREFIX = "/sandbox"
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

_HEX_TOKEN = re.compile(r"(?:[0-9a-fA-F]{2}){8,200}\Z")
_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"}

#: Apple's status for each documented reason (lets a config rule name only the reason).
REASON_STATUS = {
    **dict.fromkeys(("BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId",
                     "BadPriority", "BadTopic", "DeviceTokenNotForTopic", "DuplicateHeaders",
                     "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic",
                     "PayloadEmpty", "TopicDisallowed", "BadChannelId", "MissingChannelId",
                     "ChannelNotRegistered", "CannotCreateChannelConfig", "MissingPushType",
                     liveactivity.REASON), 400),
    **dict.fromkeys(("BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken",
                     "Forbidden", "InvalidProviderToken", "MissingProviderToken",
                     "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken", "FeatureNotEnabled"), 403),
    "BadPath": 404, "MethodNotAllowed": 405, "ExpiredToken": 410, "Unregistered": 410,
    "PayloadTooLarge": 413, "TooManyProviderTokenUpdates": 429, "TooManyRequests": 429,
    "InternalServerError": 500, "ServiceUnavailable": 503, "Shutdown": 503,
}


@dataclass(frozen=True, slots=True)
class Checked:
    """What a request that passed every check is recorded with."""
    push_type: str
    #: ``aps.event`` of a Live Activity push (None otherwise, and in ``--fast``).
    event: str | None = None
    #: "production", or "sandbox" for a request under ``SANDBOX_PREFIX``.
    environment: str = "production"


def apns_rules(settings: Settings, credentials: Credentials) -> RuleBook:
    """Default rules plus the config's; raises ``ConfigError`` for a bad rule."""
    return RuleBook.from_config("apns", default_apns_rules(settings.slow_delay), credentials.rules,
                                REASON_STATUS.get)


class ApnsService:
    def __init__(self, settings: Settings, credentials: Credentials, state: ServiceState,
                 faults: FaultInjector, auth: ProviderAuth) -> None:
        self._settings = settings
        self._credentials = credentials
        self._state = state
        self._faults = faults
        self._auth = auth
        self.rules = apns_rules(settings, credentials)

    # -- entry point -------------------------------------------------------------------------

    def handle(self, request: Request, connection: ConnectionAuth, environment: str = "production") -> Outcome:
        headers, duplicated = collect_headers(request.headers)
        given_id = headers.get("apns-id")
        apns_id = given_id if given_id is not None and UUID.match(given_id) else str(uuid.uuid4())
        token = request.path[len(DEVICE_PATH):]
        try:
            checked = self._check(request, headers, duplicated, given_id, token, connection)
        except Reject as rejection:
            return self._error(rejection.status, rejection.reason, apns_id, token,
                               detail=rejection.detail)

        rule = self.rules.match(token)
        if rule is not None and rule.environment is not None and rule.environment != environment:
            rule = None  # a token of the other environment: fine here
        checked = Checked(checked.push_type, checked.event, environment)
        if rule is None:
            return self._succeed(request, headers, token, apns_id, 0.0, checked)
        if rule.fail_times is None:
            return self._apply(rule, request, headers, token, apns_id, checked,
                               failing=rule.status != 200)
        attempt = self._state.next_attempt("apns:" + token.lower())
        return then(attempt, lambda n: self._apply(rule, request, headers, token, apns_id, checked,
                                                   failing=n <= (rule.fail_times or 0)))

    # -- checks, in Apple's order as far as it is observable ----------------------------------

    def _check(self, request: Request, headers: dict[str, str], duplicated: bool,
               given_id: str | None, token: str, connection: ConnectionAuth) -> Checked:
        if request.method != "POST":
            raise Reject(405, "MethodNotAllowed")
        if duplicated:
            raise Reject(400, "DuplicateHeaders")
        if given_id is not None and not UUID.match(given_id):
            raise Reject(400, "BadMessageId")
        team_id = self._auth.authenticate(headers.get("authorization"), connection)
        push_type = self._check_topic_and_type(headers, team_id)
        priority = headers.get("apns-priority", "10")
        if priority not in ("1", "5", "10"):
            raise Reject(400, "BadPriority")
        if push_type == "background" and priority != "5":
            raise Reject(400, "BadPriority")
        if push_type == "liveactivity" and priority == "1":
            raise Reject(400, "BadPriority")
        expiration = headers.get("apns-expiration")
        if expiration is not None and not (expiration.isascii() and expiration.isdigit()):
            raise Reject(400, "BadExpirationDate")
        collapse_id = headers.get("apns-collapse-id")
        if collapse_id is not None and len(collapse_id.encode("latin-1")) > 64:  # one char per byte
            raise Reject(400, "BadCollapseId")
        if not token:
            raise Reject(400, "MissingDeviceToken")
        if not _HEX_TOKEN.match(token):
            raise Reject(400, "BadDeviceToken")
        return Checked(push_type, self._check_payload(request, push_type))

    def _check_topic_and_type(self, headers: dict[str, str], team_id: str) -> str:
        topic = headers.get("apns-topic")
        if topic is None:
            raise Reject(400, "MissingTopic")
        if not BUNDLE_ID.match(topic):
            raise Reject(400, "BadTopic")
        suffix = next((s for s in _SUFFIXES if topic.endswith(s)), "")
        base = topic[: len(topic) - len(suffix)]
        if ".push-type." in base:
            raise Reject(400, "BadTopic")  # an unknown push-type suffix
        declared = headers.get("apns-push-type")
        if declared is None:
            push_type = _SUFFIX_TO_TYPE.get(suffix, "alert")  # Apple infers it when absent
        elif declared in PUSH_TYPE_SUFFIX:
            push_type = declared
        else:
            raise Reject(400, "InvalidPushType")
        if push_type == "mdm":
            return push_type  # MDM topics are certificate UIDs, not bundle ids
        if base not in self._auth.topics(team_id):
            raise Reject(400, "TopicDisallowed")
        if PUSH_TYPE_SUFFIX[push_type] != suffix:
            raise Reject(400, "InvalidPushType")
        return push_type

    def _check_payload(self, request: Request, push_type: str) -> str | None:
        """Returns the Live Activity event, if any."""
        if request.body_length == 0:
            raise Reject(400, "PayloadEmpty")
        limit = VOIP_PAYLOAD_LIMIT if push_type == "voip" else PAYLOAD_LIMIT
        if request.body_length > limit:
            raise Reject(413, "PayloadTooLarge")
        if self._settings.fast:
            return None
        aps = parse_aps(request.body, required=push_type in _NEEDS_APS)
        if push_type != "liveactivity" or aps is None:
            return None
        problem = liveactivity.problem(aps)
        if problem is not None:
            raise Reject(400, liveactivity.REASON, problem)
        return aps["event"]

    # -- answers -------------------------------------------------------------------------------

    def _apply(self, rule: Rule, request: Request, headers: dict[str, str], token: str,
               apns_id: str, checked: Checked, failing: bool) -> Response:
        if not failing:
            return self._succeed(request, headers, token, apns_id, rule.delay, checked)
        timestamp = None
        if rule.timestamp == "now":
            timestamp = int(time.time() * 1000)
        elif rule.timestamp is not None:
            timestamp = int(rule.timestamp)
        extra = [("retry-after", str(rule.retry_after))] if rule.retry_after is not None else []
        return self._error(rule.status, rule.reason or "", apns_id, token, extra, timestamp, rule.delay)

    def _succeed(self, request: Request, headers: dict[str, str], token: str, apns_id: str,
                 delay: float, checked: Checked) -> Response:
        fault = self._faults.pick()
        if fault is not None:
            return self._error(fault, _FAULT_REASONS[fault], apns_id, token, [("retry-after", "1")],
                               delay=delay)
        def build_record() -> PushRecord:
            recorded = {k: v for k, v in headers.items() if k.startswith("apns-")}
            recorded["apns-id"] = apns_id
            extra: dict = {"push_type": checked.push_type, "environment": checked.environment}
            if checked.event is not None:
                extra["event"] = checked.event
            return PushRecord("apns", token, recorded, request.body.decode("utf-8", "replace"),
                              request.received_at, extra)

        self._state.accept("apns", build_record)
        self._state.outcome("apns", 200, "", token)
        return Response(200, [("apns-id", apns_id)], b"", delay)

    def _error(self, status: int, reason: str, apns_id: str, token: str,
               extra: list[tuple[str, str]] | None = None, timestamp: int | None = None,
               delay: float = 0.0, detail: str | None = None) -> Response:
        self._state.outcome("apns", status, reason, token)
        return apns_error(status, reason, ("apns-id", apns_id), extra, timestamp, detail, delay)


def parse_aps(body: bytes, required: bool) -> dict | None:
    """The payload's ``aps`` dictionary, or raise ``PayloadEmpty``: Apple documents no reason for
    a body that is not a JSON object, and "no usable payload" is the closest documented one."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Reject(400, "PayloadEmpty") from None
    if not isinstance(payload, dict):
        raise Reject(400, "PayloadEmpty")
    aps = payload.get("aps")
    if (aps is None and required) or (aps is not None and not isinstance(aps, dict)):
        raise Reject(400, "PayloadEmpty")
    return aps
