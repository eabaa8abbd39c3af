"""The emulator's own certificate authority and server certificate.

Clients must verify TLS exactly as in production, only against a different root: they are
given ``ca.pem``. Files are reused across restarts while they are valid, so a client that
installed the CA once keeps working.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .logs import log

SERVER_NAMES = ("localhost",)
SERVER_IPS = ("127.0.0.1", "::1")
CA_LIFETIME = datetime.timedelta(days=3650)
SERVER_LIFETIME = datetime.timedelta(days=397)
#: Certificates closer than this to expiry are replaced at start.
RENEW_MARGIN = datetime.timedelta(days=7)


@dataclass(frozen=True)
class TlsFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _make_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pushd local emulator CA"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pushd (test only)")])
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + CA_LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    _write_private(directory / "ca-key.pem", _pem_key(key))
    (directory / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    log("ca_created", path=str(directory / "ca.pem"))
    return cert, key


def _make_server(directory: Path, ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    names = ([x509.DNSName(n) for n in SERVER_NAMES]
             + [x509.IPAddress(ipaddress.ip_address(i)) for i in SERVER_IPS])
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + SERVER_LIFETIME)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write_private(directory / "server-key.pem", _pem_key(key))
    (directory / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    log("server_cert_created", path=str(directory / "server.pem"))


def _fresh(cert: x509.Certificate) -> bool:
    now = _now()
    return cert.not_valid_before_utc <= now and now + RENEW_MARGIN < cert.not_valid_after_utc


def _load_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    try:
        cert = x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes())
        key = serialization.load_pem_private_key((directory / "ca-key.pem").read_bytes(), None)
    except (OSError, ValueError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return (cert, key) if _fresh(cert) else None


def _server_valid(directory: Path, ca_cert: x509.Certificate) -> bool:
    try:
        cert = x509.load_pem_x509_certificate((directory / "server.pem").read_bytes())
        key = serialization.load_pem_private_key((directory / "server-key.pem").read_bytes(), None)
        cert.verify_directly_issued_by(ca_cert)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return False
    wanted_ips = {ipaddress.ip_address(i) for i in SERVER_IPS}
    has_names = (set(SERVER_NAMES) <= set(sans.get_values_for_type(x509.DNSName))
                 and wanted_ips <= set(sans.get_values_for_type(x509.IPAddress)))
    key_matches = isinstance(key, ec.EllipticCurvePrivateKey) and key.public_key() == cert.public_key()
    return has_names and key_matches and _fresh(cert)


def ensure_tls_files(directory: Path) -> TlsFiles:
    """Reuse the CA and server certificate in ``directory`` when valid, else (re)create them.
    A new CA always comes with a new server certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _load_ca(directory)
    if ca is None:
        ca = _make_ca(directory)
        _make_server(directory, *ca)
    elif not _server_valid(directory, ca[0]):
        _make_server(directory, *ca)
    return TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
