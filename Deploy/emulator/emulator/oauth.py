"""Google OAuth2 token endpoint for service accounts (``POST /token``, JWT-bearer grant).

A client signs an RS256 assertion with its service-account key and trades it for an access
token, which FCM then requires. The emulator checks the assertion as Google does and answers
in Google's shapes: ``{"access_token", "expires_in", "token_type"}`` or
``{"error", "error_description"}`` with status 400.

Access tokens are self-validating (HMAC over project, account and expiry) so that several
worker processes, which share the secret, accept each other's tokens without shared state.
Restarting the emulator or ``POST /revoke-tokens`` invalidates them all, like a revoked grant.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from .config import Credentials, Settings
from .http_types import Request, Response, json_response
from .jwt_verify import (BoundedCache, MalformedToken, b64url_decode, b64url_encode, parse_jws,
                         rs256_signature_valid)
from .state import ServiceState

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FCM_SCOPES = frozenset({"https://www.googleapis.com/auth/firebase.messaging",
                        "https://www.googleapis.com/auth/cloud-platform"})
MAX_ASSERTION_LIFETIME = 3600
CLOCK_SKEW = 60
TOKEN_PREFIX = "ya29.emu-"
_TIMEFRAME = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
              "timeframe. Check your iat and exp values in the JWT claim.")


@dataclass(frozen=True, slots=True)
class Grant:
    project_id: str
    client_email: str
    expires_at: float


class AccessTokens:
    def __init__(self, secret: bytes | None, ttl: int) -> None:
        self.ttl = ttl
        self._secret = secret or os.urandom(32)
        self._cache: BoundedCache[Grant] = BoundedCache()

    @property
    def secret(self) -> bytes:
        return self._secret

    def rotate(self, secret: bytes | None = None) -> bytes:
        """Invalidate every token issued so far."""
        self._secret = secret or os.urandom(32)
        self._cache.clear()
        return self._secret

    def _mac(self, payload: str) -> str:
        return b64url_encode(hmac.new(self._secret, payload.encode(), hashlib.sha256).digest()[:24])

    def issue(self, project_id: str, client_email: str) -> str:
        claims = {"p": project_id, "e": client_email, "x": int(time.time()) + self.ttl,
                  "n": b64url_encode(os.urandom(9))}
        payload = b64url_encode(json.dumps(claims, separators=(",", ":")).encode())
        return f"{TOKEN_PREFIX}{payload}.{self._mac(payload)}"

    def check(self, token: str) -> Grant | None:
        """The grant behind a token this emulator issued (expired or not), else None."""
        grant = self._cache.get(token)
        if grant is None:
            grant = self._decode(token)
            if grant is not None:
                self._cache.put(token, grant)
        return grant

    def _decode(self, token: str) -> Grant | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        payload, _, mac = token[len(TOKEN_PREFIX):].rpartition(".")
        if not payload or not hmac.compare_digest(mac, self._mac(payload)):
            return None
        try:
            claims = json.loads(b64url_decode(payload))
            return Grant(claims["p"], claims["e"], float(claims["x"]))
        except (MalformedToken, ValueError, KeyError, TypeError):
            return None


class _Denied(Exception):
    def __init__(self, error: str, description: str) -> None:
        self.error, self.description = error, description


class OAuthService:
    def __init__(self, settings: Settings, credentials: Credentials, state: ServiceState,
                 tokens: AccessTokens, listen_port: int) -> None:
        self._settings = settings
        self._credentials = credentials
        self._state = state
        self._tokens = tokens
        #: Besides each account's own token_uri, the emulator's real URL is a valid audience,
        #: so tests on an ephemeral port need not rewrite service-account files.
        self._own_uris = {f"https://{host}:{listen_port}/token" for host in ("127.0.0.1", "localhost")}

    def handle(self, request: Request) -> Response:
        if request.method != "POST":
            return self._answer(405, {"error": "invalid_request",
                                      "error_description": "The token endpoint only accepts POST."})
        try:
            form = parse_qs(request.body.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            form = {}
        grant_type = form.get("grant_type", [""])[0]
        assertion = form.get("assertion", [""])[0]
        try:
            if grant_type != JWT_BEARER:
                raise _Denied("unsupported_grant_type", f"Invalid grant_type: {grant_type}")
            if not assertion:
                raise _Denied("invalid_request", "Missing required parameter: assertion")
            grant = self._verify(assertion)
        except _Denied as denied:
            return self._answer(400, {"error": denied.error, "error_description": denied.description},
                                reason=denied.error)
        return self._answer(200, {"access_token": self._tokens.issue(grant.project_id, grant.client_email),
                                  "expires_in": self._tokens.ttl, "token_type": "Bearer"})

    def _verify(self, assertion: str) -> Grant:
        try:
            jws = parse_jws(assertion)
        except MalformedToken:
            raise _Denied("invalid_grant", "Invalid JWT: malformed assertion.") from None
        claims = jws.claims
        account = self._credentials.service_accounts.get(claims.get("iss"))  # type: ignore[arg-type]
        if account is None:
            raise _Denied("invalid_grant", "Invalid grant: account not found")
        kid = jws.header.get("kid")
        if (jws.header.get("alg") != "RS256" or (kid is not None and kid != account.private_key_id)
                or not rs256_signature_valid(account.public_key, jws)):
            raise _Denied("invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") != account.token_uri and claims.get("aud") not in self._own_uris:
            raise _Denied("invalid_grant", "Invalid JWT: Failed audience check.")
        issued_at, expires_at, now = claims.get("iat"), claims.get("exp"), time.time()
        if (type(issued_at) is not int or type(expires_at) is not int
                or expires_at - issued_at > MAX_ASSERTION_LIFETIME or expires_at <= issued_at
                or expires_at < now - CLOCK_SKEW or issued_at > now + CLOCK_SKEW):
            raise _Denied("invalid_grant", _TIMEFRAME)
        scope = claims.get("scope")
        if not isinstance(scope, str) or not scope.strip():
            raise _Denied("invalid_scope", "Empty or missing scope not allowed.")
        if not FCM_SCOPES & set(scope.split()):
            # Google would mint a token FCM later refuses; refusing here is the emulator's
            # simplification and is documented.
            raise _Denied("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        return Grant(account.project_id, account.client_email, now + self._tokens.ttl)

    def _answer(self, status: int, payload: dict, reason: str = "") -> Response:
        self._state.outcome("oauth", status, reason, None)
        return json_response(status, payload, [("cache-control", "no-cache, no-store, max-age=0"),
                                               ("pragma", "no-cache")])
