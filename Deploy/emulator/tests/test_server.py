"""The HTTP/2 server, the admin API, certificates and process lifecycle."""
from __future__ import annotations

import asyncio
import collections
import json
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import h2.errors
import h2.settings
import hyperframe.frame

from conftest import EMULATOR_DIR, HELD_TOKEN_PREFIX, TOKEN, TOPIC, apns_post, start_emulator
from emulator.certs import ensure_tls_files
from emulator.server import malformed_request
from h2client import RawH2Client


def raw_client(emulator, alpn: list[str] | None = None) -> RawH2Client:
    return RawH2Client("127.0.0.1", emulator.info["port"], ssl.create_default_context(cafile=emulator.info["ca"]),
                       alpn)


def apns_headers(jwt: str) -> list[tuple[str, str]]:
    return [("authorization", f"bearer {jwt}"), ("apns-topic", TOPIC), ("apns-push-type", "alert")]


def test_advertises_max_concurrent_streams(emulator):
    client = raw_client(emulator)
    try:
        assert client.server_settings()[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] == 500
    finally:
        client.close()


def test_hundreds_of_concurrent_streams_on_one_connection(fresh, credentials):
    client = raw_client(fresh)
    try:
        client.server_settings()
        body = b'{"aps":{"alert":"x"}}'
        streams = [client.request("POST", f"/3/device/{TOKEN[:-4]}{i:04x}", apns_headers(credentials.jwt()), body)
                   for i in range(400)]
        replies = client.wait(*streams)
    finally:
        client.close()
    assert [r.status for r in replies] == [200] * 400
    assert fresh.admin("/stats")["by_service"]["apns"]["accepted"] == 400


def test_exceeding_max_concurrent_streams_ends_the_connection(fresh, credentials):
    client = raw_client(fresh)
    try:
        client.server_settings()  # and our ACK goes out with the next write: the limit applies
        # h2 would refuse to open stream 501 itself; pretend the server allowed more.
        client.conn.remote_settings._settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = collections.deque([10_000])
        # Held tokens: none of the first 500 streams closes before the 501st arrives.
        held = [client.request("POST", f"/3/device/{HELD_TOKEN_PREFIX}{TOKEN[4:-4]}{i:04x}",
                               apns_headers(credentials.jwt()), b'{"aps":{}}')
                for i in range(501)]
        while client.terminated is None and client.pump():
            pass
    finally:
        client.close()
    assert client.terminated is not None
    assert client.terminated.error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR
    assert client.terminated.last_stream_id == held[499]  # the first 500 were taken, the 501st not


def test_a_bad_preface_gets_goaway_before_the_close(emulator):
    """A fatal error (here: no HTTP/2 client preface) still tells the client why."""
    tls = ssl.create_default_context(cafile=emulator.info["ca"])
    tls.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", emulator.info["port"]), timeout=10) as raw:
        with tls.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 24)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
    frames = []
    while len(received) >= 9:
        frame, length = hyperframe.frame.Frame.parse_frame_header(memoryview(received[:9]))
        frame.parse_body(memoryview(received[9:9 + length]))
        frames.append(frame)
        received = received[9 + length:]
    goaways = [f for f in frames if isinstance(f, hyperframe.frame.GoAwayFrame)]
    assert len(goaways) == 1 and goaways[0].error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR


def test_large_bodies_are_flow_controlled(fresh, credentials):
    """3 MiB bodies exceed the 1 MiB stream window, and eight of them the 16 MiB connection
    window: the server must keep granting window while it discards what it does not need."""
    client = raw_client(fresh)
    try:
        big = b"x" * (3 * 1024 * 1024)
        apns = [client.request("POST", f"/3/device/{TOKEN}", apns_headers(credentials.jwt()), big) for _ in range(4)]
        fcm = [client.request("POST", "/v1/projects/demo-project/messages:send", [("authorization", "Bearer x")], big)
               for _ in range(4)]
        after = client.request("POST", f"/3/device/{TOKEN}", apns_headers(credentials.jwt()), b'{"aps":{}}')
        replies = client.wait(*apns, *fcm, after)
    finally:
        client.close()
    assert [json.loads(r.body)["reason"] for r in replies[:4]] == ["PayloadTooLarge"] * 4
    assert {r.status for r in replies[:4]} == {413}
    assert {r.status for r in replies[4:8]} == {401}  # authentication is checked first
    assert replies[8].status == 200


def test_a_reset_stream_does_not_disturb_the_connection(fresh, credentials):
    client = raw_client(fresh)
    try:
        held = client.request("POST", f"/3/device/{HELD_TOKEN_PREFIX}{TOKEN[4:]}", apns_headers(credentials.jwt()),
                              b'{"aps":{}}')
        client.reset(held)  # while the server holds it
        ok = client.request("POST", f"/3/device/{TOKEN}", apns_headers(credentials.jwt()), b'{"aps":{}}')
        [reply] = client.wait(ok)
    finally:
        client.close()
    assert reply.status == 200


def test_malformed_header_block_resets_the_stream(fresh, credentials):
    client = raw_client(fresh)
    try:
        bad = [client.request("POST", f"/3/device/{TOKEN}", [*apns_headers(credentials.jwt()), extra], b'{"aps":{}}')
               for extra in [("connection", "close"), ("Apns-Priority", "10"), ("apns-collapse-id", " padded")]]
        ok = client.request("POST", f"/3/device/{TOKEN}", apns_headers(credentials.jwt()), b'{"aps":{}}')
        replies = client.wait(*bad, ok)
    finally:
        client.close()
    assert [r.reset for r in replies] == [True, True, True, False] and replies[-1].status == 200


def test_remembered_field_verdicts_agree_with_fresh_ones():
    """Verdicts are remembered per (name, value): the second look at each block must agree
    with the first, and a field's verdict must not depend on the block it was first seen in."""
    good = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", b"/3/device/ab"), (b"apns-topic", TOPIC.encode())]
    cases = {
        "invalid field name": [*good, (b"Apns-Priority", b"10")],
        "connection-specific header": [*good, (b"connection", b"close")],
        "invalid field value": [*good, (b"apns-collapse-id", b" padded")],
        "misplaced, unknown or repeated pseudo-header": [*good, (b":path", b"/3/device/ab")],
        "missing pseudo-header": good[1:],
    }
    for _ in range(2):
        assert malformed_request([(bytes(n), bytes(v)) for n, v in good]) is None
        for why, headers in cases.items():
            assert malformed_request([(bytes(n), bytes(v)) for n, v in headers]) == why


def test_only_h2_is_spoken(emulator):
    client = raw_client(emulator, alpn=["http/1.1"])
    try:
        assert client.sock.selected_alpn_protocol() is None
        assert client.pump() is False  # closed by the server
    finally:
        client.close()


def test_admin_pushes_since_and_stats_and_reset(fresh, credentials):
    with fresh.client() as client:
        for i in range(5):
            assert apns_post(client, credentials.jwt(), token=f"{TOKEN[:-2]}{i:02x}").status_code == 200
        apns_post(client, None)
    page = fresh.admin("/pushes?since=0&limit=2")
    assert [p["token"][-2:] for p in page["pushes"]] == ["00", "01"]
    rest = fresh.admin(f"/pushes?since={page['next_since']}")
    assert [p["token"][-2:] for p in rest["pushes"]] == ["02", "03", "04"]
    assert rest["pushes"][0]["seq"] == page["pushes"][-1]["seq"] + 1
    stats = fresh.admin("/stats")
    assert stats["total_requests"] == 6 and stats["total_accepted"] == 5
    assert stats["by_service"]["apns"]["by_status"] == {"200": 5, "403": 1}
    assert stats["by_reason"] == {"MissingProviderToken": 1}
    last = rest["last_seq"]
    fresh.admin("/reset", "POST")
    assert fresh.admin("/stats")["total_requests"] == 0
    after_reset = fresh.admin(f"/pushes?since={last}")
    assert after_reset["pushes"] == [] and after_reset["last_seq"] == last  # numbering continues


def test_record_file_gets_every_accepted_push(fresh, credentials):
    record_file = Path(fresh.state_dir) / "pushes.ndjson"
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), token="cd" * 32)
    assert response.status_code == 200
    last = json.loads(record_file.read_text().splitlines()[-1])
    assert last["token"] == "cd" * 32 and last["headers"]["apns-id"] == response.headers["apns-id"]


def test_health(emulator):
    health = emulator.admin("/health")
    assert health["status"] == "ok" and health["pid"] == emulator.info["pid"]


def test_start_line_and_state_file(emulator):
    info_file = json.loads((Path(emulator.state_dir) / "emulator.json").read_text())
    assert info_file == emulator.info
    assert Path(emulator.info["ca"]).exists()


def test_certificates_are_reused_and_repaired(tmp_path):
    first = ensure_tls_files(tmp_path)
    ca, server = first.ca_cert.read_bytes(), first.server_cert.read_bytes()
    again = ensure_tls_files(tmp_path)
    assert again.ca_cert.read_bytes() == ca and again.server_cert.read_bytes() == server
    first.server_cert.write_text("garbage")
    repaired = ensure_tls_files(tmp_path)
    assert repaired.ca_cert.read_bytes() == ca and repaired.server_cert.read_bytes() != server
    ssl.create_default_context(cafile=str(repaired.ca_cert)).load_cert_chain(
        str(repaired.server_cert), str(repaired.server_key))


def test_random_faults_and_graceful_shutdown(credentials, tmp_path):
    """--fail-rate fails a seeded fraction of good requests with retryable errors; --fast
    counts without recording; SIGTERM sends GOAWAY with APNs' Shutdown reason and exits 0."""
    emulator = start_emulator(tmp_path, credentials.config, "--fail-rate", "0.3", "--seed", "7", "--fast")
    try:
        async def send_all() -> list:
            async with emulator.async_client() as client:
                requests = [client.post(f"/3/device/{TOKEN}", content=b'{"aps":{}}',
                                        headers={"authorization": f"bearer {credentials.jwt()}", "apns-topic": TOPIC})
                            for _ in range(200)]
                return await asyncio.gather(*requests)

        answers = asyncio.run(send_all())
        failed = [a for a in answers if a.status_code != 200]
        assert 20 <= len(failed) <= 120
        assert {a.status_code for a in failed} <= {429, 500, 503}
        assert all(a.headers["retry-after"] == "1" for a in failed)
        stats = emulator.admin("/stats")
        assert stats["total_accepted"] == 200 - len(failed) and stats["total_requests"] == 200
        assert emulator.admin("/pushes?since=0") | {"pushes": []} == emulator.admin("/pushes?since=0")
        assert emulator.admin("/pushes?since=0")["recording"] == "counts-only"

        client = raw_client(emulator)
        client.server_settings()
        emulator.terminate()
        deadline = time.monotonic() + 10
        while client.terminated is None and time.monotonic() < deadline and client.pump():
            pass
        client.close()
        assert client.terminated is not None and client.terminated.additional_data == b'{"reason":"Shutdown"}'
    finally:
        assert emulator.stop() == 0
    assert not (tmp_path / "emulator.json").exists()


def test_a_bad_config_is_refused_at_start(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"rules": {"apns": [{"prefix": "dead", "status": 410}]}}))
    result = subprocess.run([sys.executable, "-m", "emulator", "--port", "0", "--admin-port", "0",
                             "--state-dir", str(tmp_path / "state"), "--config", str(config)],
                            cwd=EMULATOR_DIR, capture_output=True, timeout=30)
    assert result.returncode == 2 and result.stdout == b""
    assert json.loads(result.stderr.splitlines()[-1])["event"] == "config_error"
