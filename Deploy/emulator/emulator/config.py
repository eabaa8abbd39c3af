"""Command-line settings and the credentials file (``--config``).

The config file names the test credentials the emulator accepts: APNs signing keys (``.p8``)
with the topics of their team, and Google service accounts with their project. The emulator
only needs public keys, but it reads the private files because that is what a developer has;
this is a local test setup, never a place for production keys.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key


class ConfigError(ValueError):
    """The config file cannot be used; the message says which entry and why."""


def default_state_dir() -> Path:
    base = os.environ.get("PUSHD_STATE_DIR") or str(Path.home() / ".pushd-local")
    return Path(base) / "emulator"


@dataclass(frozen=True)
class Settings:
    port: int = 8443
    admin_port: int = 8444
    state_dir: Path = field(default_factory=default_state_dir)
    config_path: Path | None = None
    max_streams: int = 1000
    jwt_min_renewal_seconds: float = 1200.0
    access_token_ttl: int = 3600
    record_file: Path | None = None
    max_records: int = 1_000_000
    fail_rate: float = 0.0
    seed: int | None = None
    slow_delay: float = 2.0
    fast: bool = False
    workers: int = 1
    log_requests: bool = False
    host: str = "127.0.0.1"
    #: Channel-management port (Apple serves it on its own host and port); 0 = a free one.
    channels_port: int = 0
    #: Broadcast channels per bundle id (Apple: 10,000 per environment).
    max_channels: int = 10_000


@dataclass(frozen=True)
class ApnsKey:
    team_id: str
    key_id: str
    public_key: ec.EllipticCurvePublicKey
    topics: frozenset[str]


@dataclass(frozen=True)
class ServiceAccount:
    project_id: str
    client_email: str
    private_key_id: str
    public_key: rsa.RSAPublicKey
    token_uri: str


@dataclass(frozen=True)
class Credentials:
    #: (team id, key id) -> key. Apple looks a provider token's key up by both.
    apns_keys: dict[tuple[str, str], ApnsKey] = field(default_factory=dict)
    #: team id -> every topic (bundle id) any of the team's keys may push to.
    team_topics: dict[str, frozenset[str]] = field(default_factory=dict)
    #: client_email -> service account.
    service_accounts: dict[str, ServiceAccount] = field(default_factory=dict)
    #: Raw ``rules`` section, interpreted by ``rules.RuleBook``.
    rules: dict = field(default_factory=dict)


def _resolve(base: Path, value: str) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else base / path


def _load_apns(entry: dict, base: Path, index: int) -> ApnsKey:
    where = f"apns[{index}]"
    try:
        team_id, key_id, key_file = entry["team_id"], entry["key_id"], entry["key_file"]
        topics = entry["topics"]
    except (KeyError, TypeError) as error:
        raise ConfigError(f"{where}: needs team_id, key_id, key_file and topics") from error
    if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"{where}: topics must be a list of bundle ids")
    try:
        private = load_pem_private_key(_resolve(base, key_file).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise ConfigError(f"{where}: cannot read the PKCS#8 PEM key in {key_file}: {error}") from error
    if not isinstance(private, ec.EllipticCurvePrivateKey) or private.curve.name != "secp256r1":
        raise ConfigError(f"{where}: {key_file} is not an EC P-256 key")
    return ApnsKey(str(team_id), str(key_id), private.public_key(), frozenset(topics))


def _load_service_account(entry: dict, base: Path, index: int) -> ServiceAccount:
    where = f"fcm[{index}]"
    try:
        project_id, sa_file = entry["project_id"], entry["service_account_file"]
    except (KeyError, TypeError) as error:
        raise ConfigError(f"{where}: needs project_id and service_account_file") from error
    try:
        account = json.loads(_resolve(base, sa_file).read_text())
        private = load_pem_private_key(account["private_key"].encode(), password=None)
        client_email, token_uri = account["client_email"], account["token_uri"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(f"{where}: {sa_file} is not a usable service account JSON: {error}") from error
    if not isinstance(private, rsa.RSAPrivateKey):
        raise ConfigError(f"{where}: the private_key in {sa_file} is not RSA")
    return ServiceAccount(str(project_id), client_email, str(account.get("private_key_id", "")),
                          private.public_key(), token_uri)


def load_credentials(path: Path | None) -> Credentials:
    """Read ``--config``; no file means an emulator that rejects every credential."""
    if path is None:
        return Credentials()
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read config {path}: {error}") from error
    if not isinstance(raw, dict):
        raise ConfigError("the config file must hold a JSON object")
    base = path.parent
    keys: dict[tuple[str, str], ApnsKey] = {}
    topics: dict[str, set[str]] = {}
    for index, entry in enumerate(raw.get("apns", [])):
        key = _load_apns(entry, base, index)
        keys[(key.team_id, key.key_id)] = key
        topics.setdefault(key.team_id, set()).update(key.topics)
    accounts: dict[str, ServiceAccount] = {}
    for index, entry in enumerate(raw.get("fcm", [])):
        account = _load_service_account(entry, base, index)
        accounts[account.client_email] = account
    rules = raw.get("rules", {})
    if not isinstance(rules, dict) or set(rules) - {"replace_defaults", "apns", "fcm"}:
        raise ConfigError("rules must be an object with optional apns and fcm lists and replace_defaults")
    unknown = set(raw) - {"apns", "fcm", "rules"}
    if unknown:
        raise ConfigError(f"unknown config sections {sorted(unknown)}")
    return Credentials(keys, {team: frozenset(t) for team, t in topics.items()}, accounts, rules)
