"""iOS 18 broadcast: the channel-management API on its own port, and broadcast pushes to
/4/broadcasts/apps/<bundle> with an apns-channel-id that must exist."""
from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from conftest import TOPIC, reason, start_emulator
from emulator.testkit import make_apns_jwt

NOW = 1_764_547_200
UPDATE = {"event": "update", "timestamp": NOW, "content-state": {"name": "Match", "props": "{}"}}
END = {"event": "end", "timestamp": NOW, "dismissal-date": NOW + 60}
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}\Z")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def auth(jwt: str) -> dict[str, str]:
    return {"authorization": f"bearer {jwt}"}


def create_channel(client: httpx.Client, jwt: str, policy: object = 1, push_type: object = "LiveActivity",
                   bundle: str = TOPIC, raw: bytes | None = None) -> httpx.Response:
    fields = {k: v for k, v in (("message-storage-policy", policy), ("push-type", push_type)) if v is not None}
    content = raw if raw is not None else json.dumps(fields).encode()
    return client.post(f"/1/apps/{bundle}/channels", headers=auth(jwt), content=content)


def new_channel(emulator, jwt: str, policy: int = 1) -> str:
    with emulator.channels_client() as client:
        response = create_channel(client, jwt, policy)
    assert response.status_code == 201, response.text
    return response.headers["apns-channel-id"]


def broadcast(client: httpx.Client, jwt: str | None, channel_id: str | None, aps: dict | None = None,
              raw: bytes | None = None, bundle: str = TOPIC, push_type: str | None = "liveactivity",
              extra: list[tuple[str, str]] | None = None) -> httpx.Response:
    headers: list[tuple[str, str]] = [("authorization", f"bearer {jwt}")] if jwt else []
    if channel_id is not None:
        headers.append(("apns-channel-id", channel_id))
    if push_type is not None:
        headers.append(("apns-push-type", push_type))
    headers += extra or []
    content = raw if raw is not None else json.dumps({"aps": aps if aps is not None else UPDATE}).encode()
    return client.post(f"/4/broadcasts/apps/{bundle}", headers=headers, content=content)


# -- channel management ------------------------------------------------------------------------

def test_create_read_list_and_delete_a_channel(fresh, credentials):
    jwt = credentials.jwt()
    request_id = str(uuid.uuid4())
    with fresh.channels_client() as client:
        created = client.post(f"/1/apps/{TOPIC}/channels", content=b'{"message-storage-policy":0,"push-type":"LiveActivity"}',
                              headers=auth(jwt) | {"apns-request-id": request_id})
        assert created.status_code == 201 and created.http_version == "HTTP/2" and created.content == b""
        assert created.headers["apns-request-id"] == request_id
        channel_id = created.headers["apns-channel-id"]
        assert BASE64.match(channel_id) and len(channel_id) == 24
        other = create_channel(client, jwt).headers["apns-channel-id"]

        read = client.get(f"/1/apps/{TOPIC}/channels", headers=auth(jwt) | {"apns-channel-id": channel_id})
        assert read.status_code == 200 and UUID.match(read.headers["apns-request-id"])
        assert read.json() == {"message-storage-policy": 0, "push-type": "LiveActivity"}
        listed = client.get(f"/1/apps/{TOPIC}/all-channels", headers=auth(jwt))
        assert listed.status_code == 200 and sorted(listed.json()["channels"]) == sorted([channel_id, other])

        deleted = client.delete(f"/1/apps/{TOPIC}/channels", headers=auth(jwt) | {"apns-channel-id": channel_id})
        assert deleted.status_code == 204 and deleted.content == b""
        again = client.delete(f"/1/apps/{TOPIC}/channels", headers=auth(jwt) | {"apns-channel-id": channel_id})
        assert (again.status_code, reason(again)) == (400, "ChannelNotRegistered")
        gone = client.get(f"/1/apps/{TOPIC}/channels", headers=auth(jwt) | {"apns-channel-id": channel_id})
        assert (gone.status_code, reason(gone)) == (400, "ChannelNotRegistered")
        assert client.get(f"/1/apps/{TOPIC}/all-channels", headers=auth(jwt)).json() == {"channels": [other]}
    [held] = fresh.admin("/channels")["channels"]
    assert (held["bundle"], held["channel_id"], held["message_storage_policy"]) == (TOPIC, other, 1)
    assert fresh.admin("/stats")["by_service"]["channels"]["by_status"] == {"201": 2, "200": 3, "204": 1, "400": 2}


def test_channels_belong_to_their_bundle(fresh, credentials):
    other_team = make_apns_jwt(credentials.other_apns_key, credentials.other_team_id, credentials.other_key_id)
    channel_id = new_channel(fresh, credentials.jwt())
    with fresh.channels_client() as client:
        elsewhere = client.get("/1/apps/com.other.app/channels",
                               headers=auth(other_team) | {"apns-channel-id": channel_id})
        assert (elsewhere.status_code, reason(elsewhere)) == (400, "ChannelNotRegistered")
        assert client.get("/1/apps/com.other.app/all-channels", headers=auth(other_team)).json() == {"channels": []}


@pytest.mark.parametrize("policy, push_type, raw, status, expected", [
    (1, None, None, 400, "MissingPushType"),
    (1, "liveactivity", None, 400, "InvalidPushType"),
    (1, "Alert", None, 400, "InvalidPushType"),
    (2, "LiveActivity", None, 400, "BadMessageStoragePolicy"),
    ("1", "LiveActivity", None, 400, "BadMessageStoragePolicy"),
    (None, "LiveActivity", None, 400, "BadMessageStoragePolicy"),
    (True, "LiveActivity", None, 400, "BadMessageStoragePolicy"),
    (1, "LiveActivity", b"not json", 400, "PayloadEmpty"),
    (1, "LiveActivity", b"[]", 400, "PayloadEmpty"),
    (1, "LiveActivity", b'{"push-type":"LiveActivity","pad":"' + b"x" * 5000 + b'"}', 413, "PayloadTooLarge"),
])
def test_create_checks_its_body(fresh, credentials, policy, push_type, raw, status, expected):
    with fresh.channels_client() as client:
        response = create_channel(client, credentials.jwt(), policy, push_type, raw=raw)
    assert (response.status_code, reason(response)) == (status, expected)
    assert fresh.admin("/channels")["channels"] == []


@pytest.mark.parametrize("method, path, headers, status, expected", [
    ("GET", f"/1/apps/{TOPIC}/channels", {}, 400, "MissingChannelId"),
    ("DELETE", f"/1/apps/{TOPIC}/channels", {}, 400, "MissingChannelId"),
    ("GET", f"/1/apps/{TOPIC}/channels", {"apns-channel-id": "not base64!"}, 400, "BadChannelId"),
    ("GET", f"/1/apps/{TOPIC}/channels", {"apns-channel-id": "QUJD"}, 400, "ChannelNotRegistered"),
    ("GET", f"/1/apps/{TOPIC}/channels", {"apns-channel-id": "A" * 132}, 400, "BadChannelId"),
    ("GET", "/1/apps/com.other.app/all-channels", {}, 400, "TopicDisallowed"),
    ("DELETE", f"/1/apps/{TOPIC}/all-channels", {}, 405, "MethodNotAllowed"),
    ("PUT", f"/1/apps/{TOPIC}/channels", {}, 405, "MethodNotAllowed"),
    ("GET", f"/1/apps/{TOPIC}/channel", {}, 404, "BadPath"),
    ("GET", f"/3/device/{'ab' * 32}", {}, 404, "BadPath"),  # pushes are not served on this port
    ("GET", f"/1/apps/{TOPIC}/all-channels", {"apns-request-id": "ABC"}, 400, "BadMessageId"),
])
def test_management_request_checks(fresh, credentials, method, path, headers, status, expected):
    with fresh.channels_client() as client:
        response = client.request(method, path, headers=auth(credentials.jwt()) | headers)
    assert (response.status_code, reason(response)) == (status, expected)
    assert UUID.match(response.headers["apns-request-id"])


def test_management_needs_a_provider_token(fresh, credentials):
    with fresh.channels_client() as client:
        missing = client.get(f"/1/apps/{TOPIC}/all-channels")
        expired = client.get(f"/1/apps/{TOPIC}/all-channels", headers=auth(credentials.jwt(NOW - 7200)))
    assert (missing.status_code, reason(missing)) == (403, "MissingProviderToken")
    assert (expired.status_code, reason(expired)) == (403, "ExpiredProviderToken")


def test_channel_limit_per_bundle(credentials, tmp_path):
    running = start_emulator(tmp_path / "limit", credentials.config, "--max-channels", "2")
    try:
        with running.channels_client() as client:
            assert [create_channel(client, credentials.jwt()).status_code for _ in range(2)] == [201, 201]
            full = create_channel(client, credentials.jwt())
            assert (full.status_code, reason(full)) == (400, "CannotCreateChannelConfig")
            first = client.get(f"/1/apps/{TOPIC}/all-channels", headers=auth(credentials.jwt())).json()["channels"][0]
            client.delete(f"/1/apps/{TOPIC}/channels", headers=auth(credentials.jwt()) | {"apns-channel-id": first})
            assert create_channel(client, credentials.jwt()).status_code == 201
    finally:
        assert running.stop() == 0


def test_reset_forgets_channels(fresh, credentials):
    channel_id = new_channel(fresh, credentials.jwt())
    fresh.admin("/reset", "POST")
    with fresh.client() as client:
        response = broadcast(client, credentials.jwt(), channel_id)
    assert (response.status_code, reason(response)) == (400, "ChannelNotRegistered")


# -- broadcast pushes --------------------------------------------------------------------------

@pytest.mark.parametrize("aps, event", [(UPDATE, "update"), (END, "end")])
def test_broadcast_to_an_existing_channel_is_recorded(fresh, credentials, aps, event):
    channel_id = new_channel(fresh, credentials.jwt())
    request_id = str(uuid.uuid4())
    with fresh.client() as client:
        response = broadcast(client, credentials.jwt(), channel_id, aps,
                             extra=[("apns-priority", "10"), ("apns-expiration", "1764550800"),
                                    ("apns-request-id", request_id)])
    assert response.status_code == 200 and response.content == b""
    assert response.headers["apns-request-id"] == request_id
    [push] = fresh.admin("/pushes?since=0")["pushes"]
    assert push["service"] == "apns-broadcast" and push["token"] is None
    assert (push["bundle"], push["channel_id"], push["push_type"], push["event"]) == (TOPIC, channel_id, "liveactivity", event)
    assert push["headers"] == {"apns-channel-id": channel_id, "apns-push-type": "liveactivity", "apns-priority": "10",
                               "apns-expiration": "1764550800", "apns-request-id": request_id}
    assert json.loads(push["body"]) == {"aps": aps}
    assert fresh.admin("/stats")["by_service"]["apns-broadcast"]["accepted"] == 1


def test_broadcast_to_a_deleted_or_unknown_channel(fresh, credentials):
    channel_id = new_channel(fresh, credentials.jwt())
    with fresh.channels_client() as management:
        management.delete(f"/1/apps/{TOPIC}/channels", headers=auth(credentials.jwt()) | {"apns-channel-id": channel_id})
    with fresh.client() as client:
        deleted = broadcast(client, credentials.jwt(), channel_id)
        unknown = broadcast(client, credentials.jwt(), "dHN0LXNyY2gtY2hubA==")
    assert (deleted.status_code, reason(deleted)) == (400, "ChannelNotRegistered")
    assert (unknown.status_code, reason(unknown)) == (400, "ChannelNotRegistered")
    assert fresh.admin("/pushes?since=0")["pushes"] == []


def test_the_5120_byte_broadcast_limit(fresh, credentials):
    channel_id = new_channel(fresh, credentials.jwt())

    def padded(total: int) -> bytes:
        aps = UPDATE | {"content-state": {"name": "Match", "props": ""}}
        base = len(json.dumps({"aps": aps}).encode())
        aps["content-state"]["props"] = "p" * (total - base)
        return json.dumps({"aps": aps}).encode()

    with fresh.client() as client:
        assert broadcast(client, credentials.jwt(), channel_id, raw=padded(5120)).status_code == 200
        too_large = broadcast(client, credentials.jwt(), channel_id, raw=padded(5121))
    assert (too_large.status_code, reason(too_large)) == (413, "PayloadTooLarge")


def test_no_storage_channels_take_only_expiration_zero(fresh, credentials):
    channel_id = new_channel(fresh, credentials.jwt(), policy=0)
    with fresh.client() as client:
        assert broadcast(client, credentials.jwt(), channel_id, extra=[("apns-expiration", "0")]).status_code == 200
        assert broadcast(client, credentials.jwt(), channel_id).status_code == 200
        later = broadcast(client, credentials.jwt(), channel_id, extra=[("apns-expiration", "1764550800")])
    assert (later.status_code, reason(later)) == (400, "BadExpirationDate")


@pytest.mark.parametrize("channel, push_type, extra, expected", [
    (None, "liveactivity", [], "MissingChannelId"),
    ("not base64!", "liveactivity", [], "BadChannelId"),
    ("existing", None, [], "MissingPushType"),
    ("existing", "alert", [], "InvalidPushType"),
    ("existing", "liveactivity", [("apns-topic", TOPIC + ".push-type.liveactivity")], "BadTopic"),
    ("existing", "liveactivity", [("apns-priority", "1")], "BadPriority"),
    ("existing", "liveactivity", [("apns-priority", "7")], "BadPriority"),
    ("existing", "liveactivity", [("apns-expiration", "tomorrow")], "BadExpirationDate"),
    ("existing", "liveactivity", [("apns-request-id", "123")], "BadMessageId"),
    ("existing", "liveactivity", [("apns-priority", "5"), ("apns-priority", "10")], "DuplicateHeaders"),
])
def test_broadcast_header_checks(fresh, credentials, channel, push_type, extra, expected):
    channel_id = new_channel(fresh, credentials.jwt()) if channel == "existing" else channel
    with fresh.client() as client:
        response = broadcast(client, credentials.jwt(), channel_id, push_type=push_type, extra=extra)
    assert (response.status_code, reason(response)) == (400, expected)
    assert UUID.match(response.headers["apns-request-id"])


@pytest.mark.parametrize("aps, raw, detail", [
    ({"event": "start", "timestamp": NOW, "attributes-type": "A", "attributes": {}, "content-state": {},
      "alert": {"title": "t"}}, None, "cannot start"),
    ({"event": "update", "content-state": {}}, None, "timestamp is required"),
    ({"event": "update", "timestamp": NOW}, None, "content-state is required"),
    ({"event": "update", "timestamp": NOW, "content-state": {}, "dismissal-date": NOW}, None, "only with event end"),
])
def test_broadcast_aps_rules(fresh, credentials, aps, raw, detail):
    channel_id = new_channel(fresh, credentials.jwt())
    with fresh.client() as client:
        response = broadcast(client, credentials.jwt(), channel_id, aps, raw=raw)
    assert (response.status_code, reason(response)) == (400, "BadLiveActivityPayload")
    assert detail in response.json()["detail"]


@pytest.mark.parametrize("raw", [b"", b"not json", b'{"no-aps":1}'])
def test_broadcast_needs_a_payload(fresh, credentials, raw):
    channel_id = new_channel(fresh, credentials.jwt())
    with fresh.client() as client:
        response = broadcast(client, credentials.jwt(), channel_id, raw=raw)
    assert (response.status_code, reason(response)) == (400, "PayloadEmpty")


def test_broadcast_authentication_and_bundle(fresh, credentials):
    channel_id = new_channel(fresh, credentials.jwt())
    with fresh.client() as client:
        missing = broadcast(client, None, channel_id)
        other_bundle = broadcast(client, credentials.jwt(), channel_id, bundle="com.other.app")
        wrong_method = client.get(f"/4/broadcasts/apps/{TOPIC}", headers=auth(credentials.jwt()))
    assert (missing.status_code, reason(missing)) == (403, "MissingProviderToken")
    assert (other_bundle.status_code, reason(other_bundle)) == (400, "TopicDisallowed")
    assert (wrong_method.status_code, reason(wrong_method)) == (405, "MethodNotAllowed")


def test_workers_share_channels_with_the_management_port(credentials, tmp_path):
    running = start_emulator(tmp_path / "workers", credentials.config, "--workers", "2")
    try:
        channel_id = new_channel(running, credentials.jwt())
        with running.client() as first, running.client() as second:  # one connection per worker
            assert broadcast(first, credentials.jwt(), channel_id).status_code == 200
            assert broadcast(second, credentials.jwt(), channel_id, END).status_code == 200
            unknown = broadcast(second, credentials.jwt(), "dHN0LXNyY2gtY2hubA==")
        assert (unknown.status_code, reason(unknown)) == (400, "ChannelNotRegistered")
        pushes = running.admin("/pushes?since=0")["pushes"]
        assert [(p["channel_id"], p["event"]) for p in pushes] == [(channel_id, "update"), (channel_id, "end")]
        stats = running.admin("/stats")
        assert stats["by_service"]["channels"]["by_status"] == {"201": 1}
        assert stats["by_service"]["apns-broadcast"]["accepted"] == 2
        assert [c["channel_id"] for c in running.admin("/channels")["channels"]] == [channel_id]
        running.admin("/reset", "POST")
        assert running.admin("/channels")["channels"] == []
    finally:
        assert running.stop() == 0
