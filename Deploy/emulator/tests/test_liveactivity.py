"""Live Activity pushes on /3/device/<token>: topic, push type, priority, size and the aps rules
per event (start, update, end), recorded with push type and event; token-prefix outcomes."""
from __future__ import annotations

import json
import time

import pytest

from conftest import FIXED_TIMESTAMP, TOKEN, TOPIC, apns_post, reason

LA_TOPIC = TOPIC + ".push-type.liveactivity"
NOW = 1_764_547_200  # epoch seconds
STATE = {"name": "InterviewActivity", "props": json.dumps({"meetingEventId": "m-77"})}
START = {"event": "start", "timestamp": NOW, "attributes-type": "LiveActivityAttributes",
         "attributes": {"name": "InterviewActivity"}, "content-state": STATE,
         "alert": {"title": "Interview", "body": "Starts in 10 minutes"}}
UPDATE = {"event": "update", "timestamp": NOW, "content-state": STATE, "stale-date": NOW + 3600,
          "relevance-score": 75.5}
END = {"event": "end", "timestamp": NOW, "dismissal-date": NOW + 60}


def body(aps: dict, **top: object) -> bytes:
    return json.dumps({"aps": aps, **top}).encode()


def la_post(client, jwt, aps: dict | None = None, raw: bytes | None = None, token: str = TOKEN,
            priority: str | None = "5", topic: str = LA_TOPIC, push_type: str | None = "liveactivity"):
    extra = [("apns-priority", priority)] if priority else []
    content = raw if raw is not None else body(aps if aps is not None else UPDATE)
    return apns_post(client, jwt, token=token, body=content, topic=topic, push_type=push_type, extra=extra)


def refused_because(response) -> str:
    assert response.status_code == 400, response.text
    assert reason(response) == "BadLiveActivityPayload"
    return response.json()["detail"]


@pytest.mark.parametrize("aps, event", [
    (START, "start"),
    (START | {"input-push-token": 1}, "start"),
    (START | {"input-push-channel": "dHN0LXNyY2gtY2hubA=="}, "start"),
    (UPDATE, "update"),
    (UPDATE | {"alert": {"title": "Moved", "body": "Now at 15:00", "sound": "default"}}, "update"),
    ({"event": "update", "timestamp": NOW, "content-state": {}}, "update"),
    (END, "end"),
    (END | {"content-state": STATE}, "end"),
    ({"event": "end", "timestamp": NOW}, "end"),
])
def test_accepted_events_are_recorded_with_push_type_and_event(fresh, credentials, aps, event):
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), aps)
    assert response.status_code == 200, response.text
    [push] = fresh.admin("/pushes?since=0")["pushes"]
    assert (push["service"], push["push_type"], push["event"]) == ("apns", "liveactivity", event)
    assert push["headers"]["apns-topic"] == LA_TOPIC and push["headers"]["apns-push-type"] == "liveactivity"
    assert push["headers"]["apns-priority"] == "5"
    assert json.loads(push["body"])["aps"] == aps


def test_alert_pushes_are_recorded_with_their_push_type_and_no_event(fresh, credentials):
    with fresh.client() as client:
        assert apns_post(client, credentials.jwt()).status_code == 200
    [push] = fresh.admin("/pushes?since=0")["pushes"]
    assert push["push_type"] == "alert" and "event" not in push


@pytest.mark.parametrize("topic, push_type, priority, expected", [
    (TOPIC, "liveactivity", "5", "InvalidPushType"),              # bundle id without the suffix
    (LA_TOPIC, "alert", "5", "InvalidPushType"),                  # suffix without the push type
    (TOPIC + ".push-type.liveactivities", "liveactivity", "5", "BadTopic"),
    ("com.other.app.push-type.liveactivity", "liveactivity", "5", "TopicDisallowed"),
    (LA_TOPIC, "liveactivity", "1", "BadPriority"),
    (LA_TOPIC, "liveactivity", "7", "BadPriority"),
])
def test_topic_push_type_and_priority(fresh, credentials, topic, push_type, priority, expected):
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), topic=topic, push_type=push_type, priority=priority)
    assert (response.status_code, reason(response)) == (400, expected)
    assert fresh.admin("/pushes?since=0")["pushes"] == []


@pytest.mark.parametrize("priority", ["5", "10", None])
def test_priority_5_or_10_and_the_push_type_inferred_from_the_suffix(fresh, credentials, priority):
    with fresh.client() as client:
        assert la_post(client, credentials.jwt(), priority=priority).status_code == 200
        inferred = la_post(client, credentials.jwt(), push_type=None, priority=priority)
    assert inferred.status_code == 200
    assert [p["push_type"] for p in fresh.admin("/pushes?since=0")["pushes"]] == ["liveactivity"] * 2


def test_the_4096_byte_limit(fresh, credentials):
    def padded(total: int) -> bytes:
        aps = UPDATE | {"content-state": {"name": "x", "props": ""}}
        base = len(body(aps))
        aps["content-state"]["props"] = "p" * (total - base)
        encoded = body(aps)
        assert len(encoded) == total
        return encoded

    with fresh.client() as client:
        assert la_post(client, credentials.jwt(), raw=padded(4096)).status_code == 200
        too_large = la_post(client, credentials.jwt(), raw=padded(4097))
    assert (too_large.status_code, reason(too_large)) == (413, "PayloadTooLarge")


@pytest.mark.parametrize("raw", [b'{"no-aps":1}', b'{"aps":[]}', b"not json"])
def test_a_live_activity_needs_an_aps_dictionary(fresh, credentials, raw):
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), raw=raw)
    assert (response.status_code, reason(response)) == (400, "PayloadEmpty")


def without(aps: dict, key: str) -> dict:
    return {k: v for k, v in aps.items() if k != key}


@pytest.mark.parametrize("aps, detail", [
    (without(UPDATE, "event"), "event must be"),
    (UPDATE | {"event": "stop"}, "event must be"),
    (without(START, "timestamp"), "timestamp is required"),
    (without(UPDATE, "timestamp"), "timestamp is required"),
    (without(END, "timestamp"), "timestamp is required"),
    (UPDATE | {"timestamp": NOW * 1000}, "epoch seconds"),       # milliseconds by mistake
    (UPDATE | {"timestamp": str(NOW)}, "epoch seconds"),
    (UPDATE | {"timestamp": True}, "epoch seconds"),
    (UPDATE | {"timestamp": -1}, "epoch seconds"),
    (without(START, "attributes-type"), "attributes-type"),
    (START | {"attributes-type": ""}, "attributes-type"),
    (START | {"attributes-type": "App.LiveActivityAttributes"}, "unqualified"),
    (without(START, "attributes"), "attributes (a dictionary)"),
    (START | {"attributes": "x"}, "attributes (a dictionary)"),
    (without(START, "content-state"), "content-state is required with event start"),
    (without(START, "alert"), "alert is required"),
    (START | {"alert": "plain text"}, "alert must be a dictionary"),
    (START | {"alert": {"sound": "default"}}, "title or body"),
    (START | {"input-push-token": 2}, "input-push-token must be 1"),
    (START | {"input-push-channel": "not base64!"}, "input-push-channel"),
    (START | {"input-push-token": 1, "input-push-channel": "dHN0LXNyY2gtY2hubA=="}, "exclusive"),
    (without(UPDATE, "content-state"), "content-state is required with event update"),
    (UPDATE | {"content-state": json.dumps(STATE)}, "content-state must be a dictionary"),
    (END | {"content-state": []}, "content-state must be a dictionary"),
    (UPDATE | {"attributes-type": "LiveActivityAttributes"}, "only with event start"),
    (END | {"attributes": {}}, "only with event start"),
    (UPDATE | {"input-push-token": 1}, "only with event start"),
    (UPDATE | {"dismissal-date": NOW}, "dismissal-date only with event end"),
    (START | {"dismissal-date": NOW}, "dismissal-date only with event end"),
    (END | {"dismissal-date": "soon"}, "dismissal-date must be"),
    (UPDATE | {"stale-date": 1.5}, "stale-date must be"),
    (UPDATE | {"stale-date": NOW * 1000}, "stale-date must be"),
    (UPDATE | {"relevance-score": "high"}, "relevance-score must be a number"),
    (UPDATE | {"relevance-score": False}, "relevance-score must be a number"),
    (UPDATE | {"alert": {}}, "title or body"),
    (UPDATE | {"stale_date": NOW}, "unknown aps keys"),                 # misspelt: the phone would ignore it
    (UPDATE | {"mutable-content": 1}, "unknown aps keys"),
])
def test_aps_rules_per_event(fresh, credentials, aps, detail):
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), aps)
    assert detail in refused_because(response)
    assert fresh.admin("/pushes?since=0")["pushes"] == []
    assert fresh.admin("/stats")["by_reason"] == {"BadLiveActivityPayload": 1}


@pytest.mark.parametrize("prefix, status, expected", [
    ("410e", 410, {"reason": "ExpiredToken"}),
    ("400b", 400, {"reason": "BadDeviceToken"}),
    ("dead", 410, {"reason": "Unregistered", "timestamp": FIXED_TIMESTAMP}),
    ("4290", 429, {"reason": "TooManyRequests"}),
])
def test_invalid_push_to_start_and_update_tokens_by_prefix(fresh, credentials, prefix, status, expected):
    with fresh.client() as client:
        start = la_post(client, credentials.jwt(), START, token=prefix + TOKEN[4:])
        update = la_post(client, credentials.jwt(), UPDATE, token=prefix + TOKEN[4:])
    assert (start.status_code, start.json()) == (status, expected)
    assert (update.status_code, update.json()) == (status, expected)
    assert fresh.admin("/pushes?since=0")["pushes"] == []


def test_unregistered_update_token_carries_the_410_timestamp(fresh, credentials):
    before = int(time.time() * 1000)
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), END, token="410a" + "cd" * 78)  # 160 hex, like real LA tokens
    assert response.status_code == 410 and reason(response) == "Unregistered"
    assert before <= response.json()["timestamp"] <= int(time.time() * 1000)


def test_rules_run_only_after_the_payload_checks(fresh, credentials):
    with fresh.client() as client:
        response = la_post(client, credentials.jwt(), without(UPDATE, "timestamp"), token="410a" + TOKEN[4:])
    assert "timestamp" in refused_because(response)


def test_fast_mode_skips_the_aps_rules_but_not_the_headers(credentials, tmp_path):
    from conftest import start_emulator
    running = start_emulator(tmp_path / "fast", credentials.config, "--fast")
    try:
        with running.client() as client:
            assert la_post(client, credentials.jwt(), without(UPDATE, "timestamp")).status_code == 200
            refused = la_post(client, credentials.jwt(), priority="1")
        assert (refused.status_code, reason(refused)) == (400, "BadPriority")
    finally:
        assert running.stop() == 0
