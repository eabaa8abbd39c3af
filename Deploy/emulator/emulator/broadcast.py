"""Broadcast pushes (iOS 18): ``POST /4/broadcasts/apps/<bundle id>`` to a channel.

One payload reaches every device subscribed to the channel, so it is a Live Activity
``update`` or ``end`` (never ``start``) of at most 5120 bytes. Headers: ``apns-channel-id``
(required, must name an existing channel of that bundle), ``apns-push-type: liveactivity``
(required), ``apns-priority`` 5 or 10, ``apns-expiration`` (must be 0 on a channel created with
message-storage-policy 0, "No Messages Stored"), ``apns-request-id``; no ``apns-topic`` (the
bundle is in the path). Answers carry ``apns-request-id``, as the channel API's do.
"""
from __future__ import annotations

import uuid

from . import liveactivity
from .apns import parse_aps
from .apns_auth import BUNDLE_ID, UUID, ConnectionAuth, ProviderAuth, Reject, apns_error, collect_headers
from .channels import channel_id_header
from .config import Settings
from .http_types import Outcome, Request, Response, then
from .records import PushRecord
from .rules import FaultInjector
from .state import ServiceState

BROADCAST_PATH = "/4/broadcasts/apps/"
SERVICE = "apns-broadcast"
PAYLOAD_LIMIT = 5120
_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"}


class BroadcastService:
    def __init__(self, settings: Settings, state: ServiceState, faults: FaultInjector,
                 auth: ProviderAuth) -> None:
        self._settings, self._state, self._faults, self._auth = settings, state, faults, auth

    def handle(self, request: Request, connection: ConnectionAuth) -> Outcome:
        headers, duplicated = collect_headers(request.headers)
        given_id = headers.get("apns-request-id")
        request_id = given_id if given_id is not None and UUID.match(given_id) else str(uuid.uuid4())
        bundle = request.path[len(BROADCAST_PATH):]
        try:
            channel_id, event = self._check(request, headers, duplicated, given_id, bundle, connection)
        except Reject as rejection:
            return self._error(rejection.status, rejection.reason, request_id, rejection.detail)
        found = self._state.lookup_channel(bundle, channel_id)
        return then(found, lambda channel: self._answer(channel, request, headers, bundle, channel_id,
                                                        event, request_id))

    def _check(self, request: Request, headers: dict[str, str], duplicated: bool, given_id: str | None,
               bundle: str, connection: ConnectionAuth) -> tuple[str, str | None]:
        if request.method != "POST":
            raise Reject(405, "MethodNotAllowed")
        if duplicated:
            raise Reject(400, "DuplicateHeaders")
        if given_id is not None and not UUID.match(given_id):
            raise Reject(400, "BadMessageId")
        team_id = self._auth.authenticate(headers.get("authorization"), connection)
        if not BUNDLE_ID.match(bundle) or bundle not in self._auth.topics(team_id):
            raise Reject(400, "TopicDisallowed")
        if "apns-topic" in headers:
            raise Reject(400, "BadTopic")  # broadcast names the bundle in the path, not a topic
        push_type = headers.get("apns-push-type")
        if push_type is None:
            raise Reject(400, "MissingPushType")
        if push_type != "liveactivity":
            raise Reject(400, "InvalidPushType")
        channel_id = channel_id_header(headers)
        if headers.get("apns-priority", "10") not in ("5", "10"):
            raise Reject(400, "BadPriority")
        expiration = headers.get("apns-expiration")
        if expiration is not None and not (expiration.isascii() and expiration.isdigit()):
            raise Reject(400, "BadExpirationDate")
        if request.body_length == 0:
            raise Reject(400, "PayloadEmpty")
        if request.body_length > PAYLOAD_LIMIT:
            raise Reject(413, "PayloadTooLarge")
        if self._settings.fast:
            return channel_id, None
        aps = parse_aps(request.body, required=True)
        assert aps is not None
        problem = liveactivity.problem(aps, broadcast=True)
        if problem is not None:
            raise Reject(400, liveactivity.REASON, problem)
        return channel_id, aps["event"]

    def _answer(self, channel: dict | None, request: Request, headers: dict[str, str], bundle: str,
                channel_id: str, event: str | None, request_id: str) -> Response:
        if channel is None:
            return self._error(400, "ChannelNotRegistered", request_id)
        expiration = headers.get("apns-expiration")
        if channel["message_storage_policy"] == 0 and expiration not in (None, "0"):
            return self._error(400, "BadExpirationDate", request_id,
                               "a channel without message storage takes only apns-expiration 0")
        fault = self._faults.pick()
        if fault is not None:
            return self._error(fault, _FAULT_REASONS[fault], request_id, extra=[("retry-after", "1")])

        def build_record() -> PushRecord:
            recorded = {k: v for k, v in headers.items() if k.startswith("apns-")}
            recorded["apns-request-id"] = request_id
            extra: dict = {"bundle": bundle, "channel_id": channel_id, "push_type": "liveactivity"}
            if event is not None:
                extra["event"] = event
            return PushRecord(SERVICE, None, recorded, request.body.decode("utf-8", "replace"),
                              request.received_at, extra)

        self._state.accept(SERVICE, build_record)
        self._state.outcome(SERVICE, 200, "", None)
        return Response(200, [("apns-request-id", request_id)])

    def _error(self, status: int, reason: str, request_id: str, detail: str | None = None,
               extra: list[tuple[str, str]] | None = None) -> Response:
        self._state.outcome(SERVICE, status, reason, None)
        return apns_error(status, reason, ("apns-request-id", request_id), extra, detail=detail)
