#!/usr/bin/env python3
"""Generate test credentials for the emulator: an APNs ``AuthKey_<KEYID>.p8`` (PKCS#8 PEM,
EC P-256), a Google service-account JSON whose ``token_uri`` points at the emulator, and the
matching emulator config file.

    python make_credentials.py [--out DIR] [--team-id TEAMID1234] [--key-id KEYID12345]
                               [--bundle com.example.app ...] [--project demo-project] [--port 8443]

By default DIR is ``${PUSHD_STATE_DIR:-~/.pushd-local}/emulator/credentials``, where the emulator
looks for ``emulator-config.json`` when started without ``--config``. Existing files are kept
unless ``--force`` is given, so clients configured with them keep working. These keys are for
local tests only.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def _state_dir() -> Path:
    return Path(os.environ.get("PUSHD_STATE_DIR") or Path.home() / ".pushd-local") / "emulator"


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _pkcs8(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_credentials(out: Path, team_id: str = "TEAMID1234", key_id: str = "KEYID12345",
                     bundles: list[str] | None = None, project: str = "demo-project",
                     port: int = 8443, force: bool = False) -> dict:
    """Write the files and return their paths (also printed by the command line)."""
    out.mkdir(parents=True, exist_ok=True)
    bundles = bundles or ["com.example.app"]
    p8 = out / f"AuthKey_{key_id}.p8"
    service_account_file = out / f"service-account-{project}.json"
    config_file = out / "emulator-config.json"
    if force or not p8.exists():
        _write_private(p8, _pkcs8(ec.generate_private_key(ec.SECP256R1())))
    if force or not service_account_file.exists():
        client_id = str(secrets.randbelow(10**21))
        email = f"pushd-emulator@{project}.iam.gserviceaccount.com"
        account = {
            "type": "service_account", "project_id": project, "private_key_id": secrets.token_hex(20),
            "private_key": _pkcs8(rsa.generate_private_key(public_exponent=65537, key_size=2048)).decode(),
            "client_email": email, "client_id": client_id,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": f"https://127.0.0.1:{port}/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{email}",
            "universe_domain": "googleapis.com",
        }
        _write_private(service_account_file, (json.dumps(account, indent=2) + "\n").encode())
    else:  # keep the key, but point token_uri at the requested port
        account = json.loads(service_account_file.read_text())
        if account.get("token_uri") != f"https://127.0.0.1:{port}/token":
            account["token_uri"] = f"https://127.0.0.1:{port}/token"
            _write_private(service_account_file, (json.dumps(account, indent=2) + "\n").encode())
    config = {"apns": [{"team_id": team_id, "key_id": key_id, "key_file": str(p8.resolve()),
                        "topics": bundles}],
              "fcm": [{"project_id": project, "service_account_file": str(service_account_file.resolve())}]}
    config_file.write_text(json.dumps(config, indent=2) + "\n")
    return {"config": str(config_file.resolve()), "apns_key": str(p8.resolve()), "team_id": team_id,
            "key_id": key_id, "topics": bundles, "service_account": str(service_account_file.resolve()),
            "project_id": project}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=_state_dir() / "credentials")
    parser.add_argument("--team-id", default="TEAMID1234")
    parser.add_argument("--key-id", default="KEYID12345")
    parser.add_argument("--bundle", action="append", help="topic (bundle id); repeatable")
    parser.add_argument("--project", default="demo-project")
    parser.add_argument("--port", type=int, default=8443, help="emulator port for token_uri")
    parser.add_argument("--force", action="store_true", help="replace existing keys")
    args = parser.parse_args(argv)
    if len(args.team_id) != 10 or len(args.key_id) != 10:
        print("warning: Apple team and key ids are 10 characters", file=sys.stderr)
    result = make_credentials(args.out, args.team_id, args.key_id, args.bundle, args.project, args.port,
                              args.force)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
