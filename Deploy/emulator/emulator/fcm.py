"""FCM HTTP v1: ``POST /v1/projects/<project>/messages:send``.

Requires an access token from ``/token`` issued for a service account of that project, checks
the message as FCM does for what the project sends (token target, string-only ``data``,
reserved keys, the 4096-byte data limit, ``android`` options) and answers with Google's error
shape: ``{"error": {"code", "message", "status", "details": [FcmError, BadRequest]}}``.
"""
from __future__ import annotations

import json
import os
import re
import time

from .config import Credentials, Settings
from .http_types import Outcome, Request, Response, json_response, then
from .oauth import AccessTokens
from .records import PushRecord
from .rules import FaultInjector, Rule, RuleBook, default_fcm_rules
from .state import ServiceState

FCM_ERROR_TYPE = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
DATA_LIMIT = 4096

#: FCM errorCode -> (HTTP status, canonical status, Google's usual message).
FCM_ERRORS: dict[str, tuple[int, str, str]] = {
    "UNSPECIFIED_ERROR": (500, "INTERNAL", "Internal error encountered."),
    "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
    "UNREGISTERED": (404, "NOT_FOUND", "Requested entity was not found."),
    "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED", "SenderId mismatch"),
    "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages."),
    "UNAVAILABLE": (503, "UNAVAILABLE", "The service is currently unavailable."),
    "INTERNAL": (500, "INTERNAL", "Internal error encountered."),
    "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service"),
}
_CANONICAL = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
              404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_FAULT_CODES = {429: "QUOTA_EXCEEDED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_UNAUTHENTICATED = ("Request had invalid authentication credentials. Expected OAuth 2 access token, "
                    "login cookie or other valid authentication credential. "
                    "See https://developers.google.com/identity/sign-in/web/devconsole-project.")
_MISSING_CREDENTIAL = ("Request is missing required authentication credential. Expected OAuth 2 "
                       "access token, login cookie or other valid authentication credential. "
                       "See https://developers.google.com/identity/sign-in/web/devconsole-project.")

# Field names accepted in either proto (snake_case) or JSON (lowerCamelCase) spelling.
_REQUEST_FIELDS = {"message", "validate_only", "validateOnly"}
_MESSAGE_FIELDS = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options",
                   "fcmOptions", "token", "topic", "condition"}
_ANDROID_FIELDS = {"collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name",
                   "restrictedPackageName", "data", "notification", "fcm_options", "fcmOptions",
                   "direct_boot_ok", "directBootOk", "bandwidth_constrained_ok",
                   "bandwidthConstrainedOk", "restricted_satellite_ok", "restrictedSatelliteOk"}
_DURATION = re.compile(r"\d{1,12}(\.\d{1,9})?s\Z")
_MAX_TTL_SECONDS = 2_419_200
_RESERVED_KEYS = {"from", "notification", "message_type"}
_INVALID_TOKEN = "The registration token is not a valid FCM registration token"


def google_error(status: int, canonical: str, message: str, error_code: str | None = None,
                 violations: list[tuple[str, str]] | None = None, extra_details: list | None = None,
                 headers: list[tuple[str, str]] | None = None, delay: float = 0.0) -> Response:
    details: list[dict] = []
    if error_code is not None:
        details.append({"@type": FCM_ERROR_TYPE, "errorCode": error_code})
    if violations:
        details.append({"@type": BAD_REQUEST_TYPE, "fieldViolations": [
            {"field": field, "description": description} for field, description in violations]})
    details.extend(extra_details or [])
    error: dict = {"code": status, "message": message, "status": canonical}
    if details:
        error["details"] = details
    response = json_response(status, {"error": error}, headers)
    response.delay = delay
    return response


def fcm_rules(settings: Settings, credentials: Credentials) -> RuleBook:
    """Default rules plus the config's; raises ``ConfigError`` for a bad rule."""
    return RuleBook.from_config("fcm", default_fcm_rules(settings.slow_delay), credentials.rules,
                                lambda code: FCM_ERRORS[code][0] if code in FCM_ERRORS else None)


class _Invalid(Exception):
    """An INVALID_ARGUMENT answer: message and the offending field."""

    def __init__(self, message: str, field: str) -> None:
        self.message, self.field = message, field


class FcmService:
    def __init__(self, settings: Settings, credentials: Credentials, state: ServiceState,
                 tokens: AccessTokens, faults: FaultInjector) -> None:
        self._settings = settings
        self._state = state
        self._tokens = tokens
        self._faults = faults
        self.rules = fcm_rules(settings, credentials)
        self._message_counter = 0

    def handle(self, request: Request, project: str) -> Outcome:
        if request.method != "POST":
            return self._error(404, "NOT_FOUND", "Method not found.", None, None)
        headers = dict(request.headers)
        denied = self._authorize(headers.get("authorization"), project)
        if denied is not None:
            return denied
        if request.body_length > len(request.body):  # the server stopped buffering: far too big
            message = f"Request payload size exceeds the limit: {len(request.body)} bytes."
            return self._error(400, "INVALID_ARGUMENT", message, "INVALID_ARGUMENT", [("", message)])
        try:
            validate_only, target_kind, target = self._validate(request.body)
        except _Invalid as invalid:
            return self._error(400, "INVALID_ARGUMENT", invalid.message, "INVALID_ARGUMENT",
                               [(invalid.field, invalid.message)])
        if validate_only:
            self._state.outcome("fcm", 200, "", target)
            return json_response(200, {"name": f"projects/{project}/messages/fake_message_id"})
        rule = self.rules.match(target) if target_kind == "token" else None
        if rule is None:
            return self._succeed(request, headers, project, target_kind, target, 0.0)
        if rule.fail_times is None:
            return self._apply(rule, request, headers, project, target, failing=rule.status != 200)
        attempt = self._state.next_attempt("fcm:" + target)
        return then(attempt, lambda n: self._apply(rule, request, headers, project, target,
                                                   failing=n <= (rule.fail_times or 0)))

    def _authorize(self, authorization: str | None, project: str) -> Response | None:
        if not authorization:
            return self._error(401, "UNAUTHENTICATED", _MISSING_CREDENTIAL, None, None)
        scheme, _, token = authorization.partition(" ")
        grant = self._tokens.check(token.strip()) if scheme.lower() == "bearer" else None
        if grant is None or grant.expires_at <= time.time():
            return self._error(401, "UNAUTHENTICATED", _UNAUTHENTICATED, None, None)
        if grant.project_id != project:
            permission = "cloudmessaging.messages.create"
            resource = f"//cloudresourcemanager.googleapis.com/projects/{project}"
            info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED",
                    "domain": "cloudresourcemanager.googleapis.com",
                    "metadata": {"permission": permission, "resource": f"projects/{project}"}}
            message = f"Permission '{permission}' denied on resource '{resource}' (or it may not exist)."
            return self._error(403, "PERMISSION_DENIED", message, None, None, extra_details=[info],
                               reason="PERMISSION_DENIED")
        return None

    # -- message validation ----------------------------------------------------------------------

    def _validate(self, body: bytes) -> tuple[bool, str, str]:
        """Returns (validate_only, target kind, target) or raises ``_Invalid``."""
        try:
            request = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            detail = error.args[0] if error.args else ""
            raise _Invalid(f"Invalid JSON payload received. {detail}", "") from None
        if not isinstance(request, dict):
            raise _Invalid("Invalid JSON payload received. Expected an object.", "")
        _reject_unknown(request, _REQUEST_FIELDS, "")
        validate_only = request.get("validate_only", request.get("validateOnly", False))
        if not isinstance(validate_only, bool):
            raise _Invalid(f"Invalid value at 'validate_only' (TYPE_BOOL), {json.dumps(validate_only)}",
                           "validate_only")
        message = request.get("message")
        if not isinstance(message, dict):
            raise _Invalid("Invalid value at 'message'. Expected an object.", "message")
        _reject_unknown(message, _MESSAGE_FIELDS, "message")
        targets = [kind for kind in ("token", "topic", "condition") if kind in message]
        if not targets:
            raise _Invalid("Recipient of the message is not set.", "message")
        if len(targets) > 1:
            raise _Invalid(f"Invalid JSON payload received. Oneof field 'target' is already set. "
                           f"Cannot set '{targets[1]}'", f"message.{targets[1]}")
        kind = targets[0]
        target = message[kind]
        if not isinstance(target, str) or not target.strip():
            raise _Invalid(_INVALID_TOKEN if kind == "token" else f"Invalid value at 'message.{kind}'",
                           f"message.{kind}")
        _check_data(message.get("data"), "message.data")
        android = message.get("android")
        if android is not None:
            _check_android(android)
        return validate_only, kind, target

    # -- answers -----------------------------------------------------------------------------------

    def _apply(self, rule: Rule, request: Request, headers: dict[str, str], project: str, token: str,
               failing: bool) -> Response:
        if not failing:
            return self._succeed(request, headers, project, "token", token, rule.delay)
        code = rule.reason or "INTERNAL"
        _, canonical, message = FCM_ERRORS.get(code, (0, _CANONICAL.get(rule.status, "UNKNOWN"), code))
        status = rule.status
        message = rule.message or message
        violations = [("message.token", message)] if code == "INVALID_ARGUMENT" else None
        extra = [("retry-after", str(rule.retry_after))] if rule.retry_after is not None else None
        return self._error(status, canonical, message, code, violations, headers=extra,
                           delay=rule.delay, token=token)

    def _succeed(self, request: Request, headers: dict[str, str], project: str, kind: str, target: str,
                 delay: float) -> Response:
        fault = self._faults.pick()
        if fault is not None:
            code = _FAULT_CODES[fault]
            status, canonical, message = FCM_ERRORS[code]
            return self._error(status, canonical, message, code, None, headers=[("retry-after", "1")],
                               delay=delay, token=target)
        self._message_counter += 1
        message_id = f"0:{int(time.time() * 1000)}%{os.getpid():x}{self._message_counter:012x}"
        name = f"projects/{project}/messages/{message_id}"

        def build_record() -> PushRecord:
            recorded = {k: v for k, v in headers.items() if k == "content-type"}
            extra = {"project": project, "name": name}
            if kind != "token":
                extra[kind] = target
            return PushRecord("fcm", target if kind == "token" else None, recorded,
                              request.body.decode("utf-8", "replace"), request.received_at, extra)

        self._state.accept("fcm", build_record)
        self._state.outcome("fcm", 200, "", target)
        response = json_response(200, {"name": name})
        response.delay = delay
        return response

    def _error(self, status: int, canonical: str, message: str, error_code: str | None,
               violations: list[tuple[str, str]] | None, extra_details: list | None = None,
               headers: list[tuple[str, str]] | None = None, delay: float = 0.0,
               token: str | None = None, reason: str | None = None) -> Response:
        self._state.outcome("fcm", status, reason or error_code or canonical, token)
        return google_error(status, canonical, message, error_code, violations, extra_details, headers, delay)


def _reject_unknown(obj: dict, known: set[str], path: str) -> None:
    for name in obj:
        if name not in known:
            where = f" at '{path}'" if path else ""
            raise _Invalid(f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.',
                           path)


def _check_data(data: object, path: str) -> None:
    if data is None:
        return
    if not isinstance(data, dict):
        raise _Invalid(f"Invalid value at '{path}' (type.googleapis.com/google.protobuf.Map), "
                       f"{json.dumps(data)}", path)
    size = 0
    for index, (key, value) in enumerate(data.items()):
        if not isinstance(value, str):
            field = f"{path}[{index}].value"
            raise _Invalid(f"Invalid value at '{field}' (TYPE_STRING), {json.dumps(value)}", field)
        lowered = key.lower()
        if lowered in _RESERVED_KEYS or lowered.startswith(("google", "gcm")):
            raise _Invalid(f"Invalid data payload key: {key}", path)
        size += len(key.encode()) + len(value.encode())
    if size > DATA_LIMIT:
        raise _Invalid(f"Android message is too big: data is {size} bytes, the limit is {DATA_LIMIT}", path)


def _check_android(android: object) -> None:
    if not isinstance(android, dict):
        raise _Invalid("Invalid value at 'message.android'. Expected an object.", "message.android")
    _reject_unknown(android, _ANDROID_FIELDS, "message.android")
    priority = android.get("priority")
    # The proto enum AndroidMessagePriority: its names, or its numbers NORMAL=0 and HIGH=1.
    named = priority in ("NORMAL", "HIGH")
    numbered = type(priority) is int and priority in (0, 1)
    if priority is not None and not named and not numbered:
        raise _Invalid("Invalid value at 'message.android.priority' "
                       "(type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "
                       f"{json.dumps(priority)}", "message.android.priority")
    ttl = android.get("ttl")
    if ttl is not None and (not isinstance(ttl, str) or not _DURATION.match(ttl)):
        raise _Invalid("Invalid value at 'message.android.ttl' "
                       f"(type.googleapis.com/google.protobuf.Duration), {json.dumps(ttl)}",
                       "message.android.ttl")
    if ttl is not None and float(ttl[:-1]) > _MAX_TTL_SECONDS:
        # FCM keeps a message at most 28 days: a longer TTL is not a value it accepts.
        raise _Invalid(f"Invalid value at 'message.android.ttl', {json.dumps(ttl)}: "
                       f"must be between 0s and {_MAX_TTL_SECONDS}s (28 days)", "message.android.ttl")
    collapse_key = android.get("collapse_key", android.get("collapseKey"))
    if collapse_key is not None and not isinstance(collapse_key, str):
        raise _Invalid("Invalid value at 'message.android.collapse_key' (TYPE_STRING), "
                       f"{json.dumps(collapse_key)}", "message.android.collapse_key")
    _check_data(android.get("data"), "message.android.data")
