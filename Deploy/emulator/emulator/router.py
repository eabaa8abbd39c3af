"""Maps a request path to the service that answers it. One port serves APNs (device and
broadcast pushes), FCM and the OAuth2 token endpoint, as a developer machine has no separate
hosts for them; channel management has its own port (``channels.ChannelService``), as at
Apple."""
from __future__ import annotations

import re
import uuid
from dataclasses import replace

from .apns import DEVICE_PATH, SANDBOX_PREFIX, ApnsService
from .apns_auth import ConnectionAuth
from .broadcast import BROADCAST_PATH, BroadcastService
from .fcm import FcmService, google_error
from .http_types import Outcome, Request, json_response
from .oauth import OAuthService
from .state import ServiceState

_FCM_SEND = re.compile(r"/v1/projects/([^/]+)/messages:send\Z")


class Router:
    """Maps a path to its service. Unknown paths get APNs' ``BadPath`` unless they look like a
    Google API path, which gets Google's 404."""

    def __init__(self, apns: ApnsService, broadcast: BroadcastService, fcm: FcmService, oauth: OAuthService,
                 state: ServiceState) -> None:
        self.apns, self.broadcast, self.fcm, self.oauth, self._state = apns, broadcast, fcm, oauth, state

    def dispatch(self, request: Request, auth: ConnectionAuth) -> Outcome:
        path = request.path
        if path.startswith(DEVICE_PATH):
            return self.apns.handle(request, auth)
        if path.startswith(SANDBOX_PREFIX + DEVICE_PATH):
            return self.apns.handle(replace(request, path=path[len(SANDBOX_PREFIX):]), auth, "sandbox")
        if path.startswith(BROADCAST_PATH):
            return self.broadcast.handle(request, auth)
        route = path.partition("?")[0]
        if route == "/token":
            return self.oauth.handle(request)
        match = _FCM_SEND.match(route)
        if match:
            return self.fcm.handle(request, match.group(1))
        if route.startswith("/v1/"):
            self._state.outcome("other", 404, "NOT_FOUND", None)
            return google_error(404, "NOT_FOUND", "Requested entity was not found.")
        self._state.outcome("other", 404, "BadPath", None)
        return json_response(404, {"reason": "BadPath"}, [("apns-id", str(uuid.uuid4()))])
