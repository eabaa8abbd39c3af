"""Compact-JWS parsing and signature checks for the two token kinds the providers accept:
ES256 provider tokens (APNs) and RS256 service-account assertions (Google OAuth2).

Signatures are checked with ``cryptography``; what a claim *means* (expiry, issuer, audience)
is decided by the callers, which know the provider's rules.
"""
from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


class MalformedToken(ValueError):
    """The string is not a compact JWS with JSON header and claims."""


@dataclass(frozen=True, slots=True)
class ParsedJws:
    header: dict
    claims: dict
    signing_input: bytes
    signature: bytes


def b64url_decode(segment: str) -> bytes:
    """Decode unpadded base64url strictly (JWS forbids padding and other alphabets)."""
    if "=" in segment or "+" in segment or "/" in segment:
        raise MalformedToken("not unpadded base64url")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError) as error:
        raise MalformedToken("bad base64url") from error


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def parse_jws(token: str) -> ParsedJws:
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        raise MalformedToken("a JWS has three non-empty parts")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedToken("header or claims are not JSON") from error
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise MalformedToken("header and claims must be JSON objects")
    signing_input = (parts[0] + "." + parts[1]).encode("ascii")
    return ParsedJws(header, claims, signing_input, b64url_decode(parts[2]))


def es256_signature_valid(key: ec.EllipticCurvePublicKey, jws: ParsedJws) -> bool:
    """JWS ES256 carries the raw 64-byte r||s, not DER: anything else is invalid."""
    if len(jws.signature) != 64:
        return False
    r = int.from_bytes(jws.signature[:32], "big")
    s = int.from_bytes(jws.signature[32:], "big")
    try:
        key.verify(encode_dss_signature(r, s), jws.signing_input, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def rs256_signature_valid(key: rsa.RSAPublicKey, jws: ParsedJws) -> bool:
    try:
        key.verify(jws.signature, jws.signing_input, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


V = TypeVar("V")


class BoundedCache(Generic[V]):
    """A small LRU-less FIFO map so that a verified token costs one signature check, while a
    client that mints a token per request cannot grow memory without bound."""

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        return self._items.get(key)

    def put(self, key: str, value: V) -> None:
        if key not in self._items and len(self._items) >= self._capacity:
            self._items.popitem(last=False)
        self._items[key] = value

    def clear(self) -> None:
        self._items.clear()
