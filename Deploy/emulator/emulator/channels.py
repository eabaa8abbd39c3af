"""Broadcast channels (iOS 18): the registry and Apple's channel-management API.

Apple serves channel management on its own hosts and ports
(``api-manage-broadcast[.sandbox].push.apple.com:2196/2195``); the emulator serves it on its
own port too (``--channels-port``), with the same token authentication as APNs:

* ``POST   /1/apps/<bundle>/channels``     body ``{"message-storage-policy": 0|1,
  "push-type": "LiveActivity"}`` -> 201, ``apns-channel-id`` header, empty body;
* ``GET    /1/apps/<bundle>/channels``     header ``apns-channel-id`` -> 200
  ``{"message-storage-policy": n, "push-type": "LiveActivity"}``;
* ``DELETE /1/apps/<bundle>/channels``     header ``apns-channel-id`` -> 204;
* ``GET    /1/apps/<bundle>/all-channels`` -> 200 ``{"channels": [ids]}``.

Every answer carries ``apns-request-id`` (echoed or generated). The registry is owned by one
process (the parent with ``--workers``), because broadcast pushes served by any worker must
see channels created on the management port.
"""
from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Callable

from .apns_auth import BUNDLE_ID, UUID, ConnectionAuth, ProviderAuth, Reject, apns_error, collect_headers
from .http_types import Outcome, Request, Response, json_response
from .liveactivity import is_channel_id

#: Apple: "up to 10,000 channels for your app in the development and production environment".
DEFAULT_MAX_CHANNELS = 10_000
PUSH_TYPE = "LiveActivity"
#: 0 = No Messages Stored, 1 = Most Recent Message Stored.
STORAGE_POLICIES = (0, 1)
MAX_BODY = 4096
_PATH = re.compile(r"/1/apps/([^/]*)/(channels|all-channels)\Z")
_METHODS = {"channels": ("POST", "GET", "DELETE"), "all-channels": ("GET",)}


@dataclass(frozen=True, slots=True)
class Channel:
    bundle: str
    channel_id: str
    message_storage_policy: int
    push_type: str
    created_at: float

    def to_json(self) -> dict:
        return asdict(self)


class ChannelRegistry:
    """Channels per bundle id, with Apple's per-app limit."""

    def __init__(self, max_per_bundle: int = DEFAULT_MAX_CHANNELS) -> None:
        self._max = max_per_bundle
        self._channels: dict[str, dict[str, Channel]] = {}

    def create(self, bundle: str, storage_policy: int, push_type: str) -> Channel | None:
        """A new channel, or None when the bundle already has the maximum."""
        channels = self._channels.setdefault(bundle, {})
        if len(channels) >= self._max:
            return None
        while True:  # 128 random bits: a collision is theoretical, but cheap to rule out
            channel_id = base64.b64encode(os.urandom(16)).decode()
            if channel_id not in channels:
                break
        channel = Channel(bundle, channel_id, storage_policy, push_type, time.time())
        channels[channel_id] = channel
        return channel

    def get(self, bundle: str, channel_id: str) -> Channel | None:
        return self._channels.get(bundle, {}).get(channel_id)

    def delete(self, bundle: str, channel_id: str) -> bool:
        return self._channels.get(bundle, {}).pop(channel_id, None) is not None

    def ids(self, bundle: str) -> list[str]:
        return list(self._channels.get(bundle, {}))

    def all(self) -> list[dict]:
        return [channel.to_json() for channels in self._channels.values() for channel in channels.values()]

    def reset(self) -> None:
        self._channels.clear()


class ChannelService:
    """The management API. ``count(status, reason)`` records each answer in ``/stats``
    (service ``channels``)."""

    def __init__(self, registry: ChannelRegistry, auth: ProviderAuth,
                 count: Callable[[int, str], None]) -> None:
        self._registry, self._auth, self._count = registry, auth, count

    def dispatch(self, request: Request, connection: ConnectionAuth) -> Outcome:
        """Router interface (``server.Http2Connection`` calls ``dispatch``)."""
        headers, duplicated = collect_headers(request.headers)
        given_id = headers.get("apns-request-id")
        request_id = given_id if given_id is not None and UUID.match(given_id) else str(uuid.uuid4())
        try:
            response = self._handle(request, headers, duplicated, given_id, connection)
        except Reject as rejection:
            self._count(rejection.status, rejection.reason)
            return apns_error(rejection.status, rejection.reason, ("apns-request-id", request_id),
                              detail=rejection.detail)
        self._count(response.status, "")
        response.headers.insert(0, ("apns-request-id", request_id))
        return response

    def _handle(self, request: Request, headers: dict[str, str], duplicated: bool,
                given_id: str | None, connection: ConnectionAuth) -> Response:
        match = _PATH.match(request.path.partition("?")[0])
        if match is None:
            raise Reject(404, "BadPath")
        bundle, resource = match.groups()
        if request.method not in _METHODS[resource]:
            raise Reject(405, "MethodNotAllowed")
        if duplicated:
            raise Reject(400, "DuplicateHeaders")
        if given_id is not None and not UUID.match(given_id):
            raise Reject(400, "BadMessageId")
        team_id = self._auth.authenticate(headers.get("authorization"), connection)
        if not BUNDLE_ID.match(bundle) or bundle not in self._auth.topics(team_id):
            raise Reject(400, "TopicDisallowed")
        if resource == "all-channels":
            return json_response(200, {"channels": self._registry.ids(bundle)})
        if request.method == "POST":
            return self._create(bundle, request)
        channel_id = channel_id_header(headers)
        if request.method == "GET":
            channel = self._registry.get(bundle, channel_id)
            if channel is None:
                raise Reject(400, "ChannelNotRegistered")
            return json_response(200, {"message-storage-policy": channel.message_storage_policy,
                                       "push-type": channel.push_type})
        if not self._registry.delete(bundle, channel_id):
            raise Reject(400, "ChannelNotRegistered")
        return Response(204)

    def _create(self, bundle: str, request: Request) -> Response:
        if request.body_length > MAX_BODY:
            raise Reject(413, "PayloadTooLarge")
        try:
            body = json.loads(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise Reject(400, "PayloadEmpty") from None
        if not isinstance(body, dict):
            raise Reject(400, "PayloadEmpty")
        if "push-type" not in body:
            raise Reject(400, "MissingPushType")
        if body["push-type"] != PUSH_TYPE:
            raise Reject(400, "InvalidPushType")
        policy = body.get("message-storage-policy")
        if type(policy) is not int or policy not in STORAGE_POLICIES:
            raise Reject(400, "BadMessageStoragePolicy",
                         "message-storage-policy must be 0 (no messages stored) or 1 (most recent stored)")
        channel = self._registry.create(bundle, policy, PUSH_TYPE)
        if channel is None:
            raise Reject(400, "CannotCreateChannelConfig")
        return Response(201, [("apns-channel-id", channel.channel_id)])


def channel_id_header(headers: dict[str, str]) -> str:
    """The ``apns-channel-id`` header, or raise ``MissingChannelId`` / ``BadChannelId``."""
    channel_id = headers.get("apns-channel-id")
    if channel_id is None:
        raise Reject(400, "MissingChannelId")
    if not is_channel_id(channel_id):
        raise Reject(400, "BadChannelId")
    return channel_id
