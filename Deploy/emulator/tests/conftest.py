"""Test support: credentials, emulator processes on free ports and HTTP/2 clients.

Each emulator runs as a real subprocess (``python -m emulator --port 0 --admin-port 0``); the
fixture reads its JSON start line, then polls ``/health`` until it answers. Tests talk to it
over real HTTP/2 + TLS, verifying the emulator's own CA, as the delivery workers do.
"""
from __future__ import annotations

import json
import selectors
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

EMULATOR_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(EMULATOR_DIR))

from emulator.testkit import make_apns_jwt, make_oauth_assertion  # noqa: E402
from make_credentials import make_credentials  # noqa: E402

TOPIC = "com.example.app"
TOKEN = "ab" * 32  # 64 hex characters, matches no rule
START_TIMEOUT = 15.0
FIXED_TIMESTAMP = 1700000000000
#: APNs tokens starting with this are answered only after HELD_SECONDS: a stream a test needs
#: open stays open however slowly a loaded machine runs the test (the default slow rule's
#: 0.3 s did not: a client still sending its requests when the first answers came saw those
#: streams closed under it). The connection's end cancels what is still held.
HELD_TOKEN_PREFIX = "4e1d"
HELD_SECONDS = 60


@dataclass
class Credentials:
    config: Path
    apns_key: ec.EllipticCurvePrivateKey
    team_id: str
    key_id: str
    other_apns_key: ec.EllipticCurvePrivateKey  # a second team, for connection binding
    other_team_id: str
    other_key_id: str
    service_account: dict
    other_service_account: dict  # a second project
    _current: str | None = None

    def jwt(self, issued_at: int | None = None) -> str:
        """A provider token; without ``issued_at`` always the same one, as a real client reuses
        its token (a new one per request would hit TooManyProviderTokenUpdates)."""
        if issued_at is not None:
            return make_apns_jwt(self.apns_key, self.team_id, self.key_id, issued_at)
        if self._current is None:
            self._current = make_apns_jwt(self.apns_key, self.team_id, self.key_id)
        return self._current


def _load_key(path: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(Path(path).read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


@pytest.fixture(scope="session")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    base = tmp_path_factory.mktemp("credentials")
    first = make_credentials(base / "a", "TEAMID1234", "KEYID12345", [TOPIC], "demo-project")
    second = make_credentials(base / "b", "TEAMID5678", "KEYID56789", ["com.other.app"], "other-project")
    config = json.loads(Path(first["config"]).read_text())
    other = json.loads(Path(second["config"]).read_text())
    config["apns"] += other["apns"]
    config["fcm"] += other["fcm"]
    config["rules"] = {
        "apns": [{"prefix": "dead", "reason": "Unregistered", "timestamp": FIXED_TIMESTAMP},
                 {"prefix": HELD_TOKEN_PREFIX, "delay": HELD_SECONDS}],
        "fcm": [{"prefix": "gone-", "error_code": "UNREGISTERED"}],
    }
    path = base / "config.json"
    path.write_text(json.dumps(config))
    return Credentials(path, _load_key(first["apns_key"]), "TEAMID1234", "KEYID12345",
                       _load_key(second["apns_key"]), "TEAMID5678", "KEYID56789",
                       json.loads(Path(first["service_account"]).read_text()),
                       json.loads(Path(second["service_account"]).read_text()))


class Emulator:
    def __init__(self, process: subprocess.Popen, info: dict, state_dir: Path) -> None:
        self.process, self.info, self.state_dir = process, info, state_dir
        self.url = info["url"]
        self.admin_url = info["admin_url"]
        self.channels_url = info["channels_url"]
        self.tls = ssl.create_default_context(cafile=info["ca"])
        self._terminated = False

    def client(self, **kwargs: object) -> httpx.Client:
        """A new client, hence a new HTTP/2 connection."""
        return httpx.Client(http2=True, verify=self.tls, base_url=self.url, timeout=10.0, **kwargs)

    def channels_client(self) -> httpx.Client:
        """A client of the channel-management port (Apple's api-manage-broadcast host)."""
        return httpx.Client(http2=True, verify=self.tls, base_url=self.channels_url, timeout=10.0)

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(http2=True, verify=self.tls, base_url=self.url, timeout=10.0)

    def admin(self, path: str, method: str = "GET") -> dict:
        request = urllib.request.Request(self.admin_url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def terminate(self) -> None:
        """Ask for a clean stop once (a second SIGTERM during shutdown would kill it)."""
        if not self._terminated and self.process.poll() is None:
            self._terminated = True
            self.process.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        self.terminate()
        return self.process.wait(timeout=15)


def start_emulator(state_dir: Path, config: Path, *flags: str) -> Emulator:
    state_dir.mkdir(parents=True, exist_ok=True)
    log = (state_dir / "stderr.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--port", "0", "--admin-port", "0", "--state-dir", str(state_dir),
         "--config", str(config), *flags],
        cwd=EMULATOR_DIR, stdout=subprocess.PIPE, stderr=log)
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(START_TIMEOUT):
        process.kill()
        raise RuntimeError(f"emulator printed no start line; see {state_dir / 'stderr.log'}")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"emulator exited with {process.wait()}; see {state_dir / 'stderr.log'}")
    emulator = Emulator(process, json.loads(line), state_dir)
    deadline = time.monotonic() + START_TIMEOUT
    while True:  # readiness: poll /health
        try:
            if emulator.admin("/health")["status"] == "ok":
                return emulator
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@pytest.fixture(scope="session")
def emulator(credentials: Credentials, tmp_path_factory: pytest.TempPathFactory):
    """The main instance: one process, normal mode, short windows so that tests stay fast."""
    state = tmp_path_factory.mktemp("state")
    running = start_emulator(state, credentials.config, "--jwt-min-renewal-seconds", "0.5",
                             "--slow-delay", "0.3", "--record-file", str(state / "pushes.ndjson"),
                             "--max-streams", "500")
    yield running
    assert running.stop() == 0, "SIGTERM must end the emulator cleanly"


@pytest.fixture()
def fresh(emulator: Emulator) -> Emulator:
    """The main instance with records, counters and attempt counters cleared."""
    emulator.admin("/reset", "POST")
    return emulator


def apns_post(client: httpx.Client, jwt: str | None, token: str = TOKEN, body: bytes | None = None,
              topic: str | None = TOPIC, push_type: str | None = "alert",
              extra: list[tuple[str, str]] | None = None) -> httpx.Response:
    headers: list[tuple[str, str]] = []
    if jwt is not None:
        headers.append(("authorization", f"bearer {jwt}"))
    if topic is not None:
        headers.append(("apns-topic", topic))
    if push_type is not None:
        headers.append(("apns-push-type", push_type))
    headers += extra or []
    content = b'{"aps":{"alert":{"title":"t","body":"b"}}}' if body is None else body
    return client.post(f"/3/device/{token}", headers=headers, content=content)


def reason(response: httpx.Response) -> str:
    return response.json()["reason"]


def access_token(client: httpx.Client, service_account: dict, audience: str | None = None) -> str:
    assertion = make_oauth_assertion(service_account, audience=audience or str(client.base_url.join("/token")))
    response = client.post("/token", data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                           "assertion": assertion})
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def fcm_send(client: httpx.Client, bearer: str | None, message: dict, project: str = "demo-project",
             **top: object) -> httpx.Response:
    headers = {"authorization": f"Bearer {bearer}"} if bearer is not None else {}
    return client.post(f"/v1/projects/{project}/messages:send", headers=headers,
                       json={"message": message, **top})
