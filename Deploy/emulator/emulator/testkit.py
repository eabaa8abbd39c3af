"""Client-side helpers that mint the credentials a real provider client would send: APNs
provider tokens (ES256) and Google service-account assertions (RS256).

Shared by the test suite, ``h2load-ceiling.sh`` and anyone poking the emulator by hand, so no
one copies JWT code around. Command line::

    python -m emulator.testkit apns-jwt   --config CONFIG [--index N]   # prints a provider token
    python -m emulator.testkit apns-topic --config CONFIG [--index N]   # prints the key's first topic
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from .jwt_verify import b64url_encode

FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"


def _segment(obj: dict) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":")).encode())


def make_apns_jwt(private_key: ec.EllipticCurvePrivateKey, team_id: str, key_id: str,
                  issued_at: int | None = None) -> str:
    """An APNs provider token: ES256 with the raw 64-byte r||s signature JWS requires."""
    signing_input = _segment({"alg": "ES256", "kid": key_id}) + "." + _segment(
        {"iss": team_id, "iat": int(time.time()) if issued_at is None else issued_at})
    r, s = decode_dss_signature(private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64url_encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def make_oauth_assertion(service_account: dict, audience: str | None = None, issued_at: int | None = None,
                         lifetime: int = 3600, scope: str = FCM_SCOPE) -> str:
    """The JWT-bearer assertion a Google client posts to ``token_uri``."""
    key = serialization.load_pem_private_key(service_account["private_key"].encode(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    now = int(time.time()) if issued_at is None else issued_at
    header = {"alg": "RS256", "typ": "JWT", "kid": service_account.get("private_key_id")}
    claims = {"iss": service_account["client_email"], "scope": scope,
              "aud": audience or service_account["token_uri"], "iat": now, "exp": now + lifetime}
    signing_input = _segment(header) + "." + _segment(claims)
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing_input + "." + b64url_encode(signature)


def load_apns_key(config_path: Path, index: int = 0) -> tuple[ec.EllipticCurvePrivateKey, dict]:
    config = json.loads(config_path.read_text())
    entry = config["apns"][index]
    key_file = Path(entry["key_file"])
    if not key_file.is_absolute():
        key_file = config_path.parent / key_file
    key = serialization.load_pem_private_key(key_file.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key, entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="emulator.testkit")
    parser.add_argument("command", choices=["apns-jwt", "apns-topic"])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--index", type=int, default=0, help="which apns entry of the config")
    args = parser.parse_args(argv)
    key, entry = load_apns_key(args.config, args.index)
    if args.command == "apns-jwt":
        print(make_apns_jwt(key, entry["team_id"], entry["key_id"]))
    else:
        print(entry["topics"][0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
