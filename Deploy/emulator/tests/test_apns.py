"""APNs provider API: authentication, header and payload checks, scripted outcomes."""
from __future__ import annotations

import re
import time
import uuid

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import FIXED_TIMESTAMP, TOKEN, TOPIC, apns_post, reason
from emulator.testkit import make_apns_jwt

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def test_accepted_push_is_recorded_with_its_headers_and_body(fresh, credentials):
    apns_id = str(uuid.uuid4())
    body = b'{"aps":{"alert":{"title":"Hi","body":"there"},"mutable-content":1},"body":{"k":"v"}}'
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), body=body,
                             extra=[("apns-id", apns_id), ("apns-priority", "10"), ("apns-expiration", "0"),
                                    ("apns-collapse-id", "c1")])
    assert response.status_code == 200 and response.http_version == "HTTP/2"
    assert response.headers["apns-id"] == apns_id and response.content == b""
    [push] = fresh.admin("/pushes?since=0")["pushes"]
    assert push["service"] == "apns" and push["token"] == TOKEN and push["body"] == body.decode()
    assert push["headers"] == {"apns-topic": TOPIC, "apns-push-type": "alert", "apns-id": apns_id,
                               "apns-priority": "10", "apns-expiration": "0", "apns-collapse-id": "c1"}


def test_generates_a_lowercase_apns_id_when_none_is_given(fresh, credentials):
    with fresh.client() as client:
        ok = apns_post(client, credentials.jwt())
        failed = apns_post(client, None)
    assert UUID.match(ok.headers["apns-id"]) and UUID.match(failed.headers["apns-id"])


@pytest.mark.parametrize("authorization, expected", [
    (None, "MissingProviderToken"),
    ("bearer not-a-jwt", "InvalidProviderToken"),
    ("basic abc", "InvalidProviderToken"),
])
def test_missing_or_malformed_provider_token(fresh, authorization, expected):
    headers = {"apns-topic": TOPIC} | ({"authorization": authorization} if authorization else {})
    with fresh.client() as client:
        response = client.post(f"/3/device/{TOKEN}", headers=headers, content=b'{"aps":{}}')
    assert (response.status_code, reason(response)) == (403, expected)


def test_provider_token_checks(fresh, credentials):
    stranger = ec.generate_private_key(ec.SECP256R1())
    now = int(time.time())
    cases = {
        "bad signature": (make_apns_jwt(stranger, credentials.team_id, credentials.key_id), "InvalidProviderToken"),
        "unknown key id": (make_apns_jwt(credentials.apns_key, credentials.team_id, "UNKNOWN123"),
                           "InvalidProviderToken"),
        "iat over an hour old": (credentials.jwt(now - 3700), "ExpiredProviderToken"),
        "iat in the future": (credentials.jwt(now + 300), "InvalidProviderToken"),
    }
    for name, (jwt, expected) in cases.items():
        with fresh.client() as client:
            response = apns_post(client, jwt)
        assert (response.status_code, reason(response)) == (403, expected), name


def test_a_new_token_on_a_connection_is_limited_by_the_renewal_window(fresh, credentials):
    now = int(time.time())
    first, second = credentials.jwt(now - 10), credentials.jwt(now - 5)
    with fresh.client() as client:
        assert apns_post(client, first).status_code == 200
        assert apns_post(client, first).status_code == 200  # the same token is no update
        refused = apns_post(client, second)
        assert (refused.status_code, reason(refused)) == (429, "TooManyProviderTokenUpdates")
        time.sleep(0.6)  # the test instance's window is 0.5 s; this waits out a window, not an event
        assert apns_post(client, second).status_code == 200
    with fresh.client() as other_connection:
        assert apns_post(other_connection, second).status_code == 200


def test_a_connection_is_bound_to_one_team(fresh, credentials):
    other_team = make_apns_jwt(credentials.other_apns_key, credentials.other_team_id, credentials.other_key_id)
    with fresh.client() as client:
        assert apns_post(client, credentials.jwt()).status_code == 200
        response = apns_post(client, other_team, topic="com.other.app")
    assert (response.status_code, reason(response)) == (403, "UnrelatedKeyIdInToken")


@pytest.mark.parametrize("topic, push_type, priority, expected", [
    (None, "alert", None, "MissingTopic"),
    ("com.other.app", "alert", None, "TopicDisallowed"),
    ("com.example.app.push-type.bogus", "alert", None, "BadTopic"),
    ("com example", "alert", None, "BadTopic"),
    (TOPIC, "fancy", None, "InvalidPushType"),
    (TOPIC, "liveactivity", None, "InvalidPushType"),
    (TOPIC + ".voip", "alert", None, "InvalidPushType"),
    (TOPIC, "alert", "7", "BadPriority"),
    (TOPIC, "background", "10", "BadPriority"),
    (TOPIC, "background", None, "BadPriority"),
])
def test_topic_push_type_and_priority_are_checked(fresh, credentials, topic, push_type, priority, expected):
    extra = [("apns-priority", priority)] if priority else []
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), topic=topic, push_type=push_type, extra=extra)
    assert (response.status_code, reason(response)) == (400, expected)


@pytest.mark.parametrize("topic, push_type, priority, body", [
    (TOPIC + ".push-type.liveactivity", "liveactivity", "10",
     b'{"aps":{"timestamp":1,"event":"update","content-state":{}}}'),
    (TOPIC, "background", "5", b'{"aps":{"content-available":1}}'),
    (TOPIC + ".voip", "voip", "10", b'{"caller":"x","pad":"' + b"x" * 4900 + b'"}'),
    (TOPIC + ".voip", None, None, b'{"caller":"x"}'),
])
def test_valid_push_types(fresh, credentials, topic, push_type, priority, body):
    extra = [("apns-priority", priority)] if priority else []
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), topic=topic, push_type=push_type, body=body, extra=extra)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("extra, expected", [
    ([("apns-expiration", "soon")], "BadExpirationDate"),
    ([("apns-collapse-id", "c" * 65)], "BadCollapseId"),
    ([("apns-id", str(uuid.uuid4()).upper())], "BadMessageId"),
    ([("apns-id", "123")], "BadMessageId"),
    ([("apns-priority", "10"), ("apns-priority", "5")], "DuplicateHeaders"),
])
def test_header_values_are_checked(fresh, credentials, extra, expected):
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), extra=extra)
    assert (response.status_code, reason(response)) == (400, expected)


@pytest.mark.parametrize("token, expected", [
    ("", "MissingDeviceToken"),
    ("abc", "BadDeviceToken"),
    ("zz" * 32, "BadDeviceToken"),
    ("ab" * 7, "BadDeviceToken"),
    ("ab" * 201, "BadDeviceToken"),
])
def test_device_token_format(fresh, credentials, token, expected):
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), token=token)
    assert (response.status_code, reason(response)) == (400, expected)


@pytest.mark.parametrize("body, status, expected", [
    (b"", 400, "PayloadEmpty"),
    (b"not json", 400, "PayloadEmpty"),
    (b'["aps"]', 400, "PayloadEmpty"),
    (b'{"alert":"no aps"}', 400, "PayloadEmpty"),
    (b'{"aps":"not a dictionary"}', 400, "PayloadEmpty"),
    (b'{"aps":{"alert":"' + b"x" * 4096 + b'"}}', 413, "PayloadTooLarge"),
])
def test_payload_checks(fresh, credentials, body, status, expected):
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), body=body)
    assert (response.status_code, reason(response)) == (status, expected)


def test_path_and_method(fresh, credentials):
    with fresh.client() as client:
        wrong_method = client.get(f"/3/device/{TOKEN}", headers={"authorization": f"bearer {credentials.jwt()}"})
        wrong_path = client.post("/3/devices/x", content=b"{}")
    assert (wrong_method.status_code, reason(wrong_method)) == (405, "MethodNotAllowed")
    assert (wrong_path.status_code, reason(wrong_path)) == (404, "BadPath")


@pytest.mark.parametrize("prefix, status, expected", [
    ("410e", 410, "ExpiredToken"),
    ("400b", 400, "BadDeviceToken"),
    ("4030", 400, "DeviceTokenNotForTopic"),
    ("4290", 429, "TooManyRequests"),
    ("5000", 500, "InternalServerError"),
    ("5030", 503, "ServiceUnavailable"),
])
def test_scripted_failures(fresh, credentials, prefix, status, expected):
    with fresh.client() as client:
        response = apns_post(client, credentials.jwt(), token=prefix + TOKEN[4:])
    assert (response.status_code, response.json()) == (status, {"reason": expected})
    assert fresh.admin("/pushes?since=0")["pushes"] == []


def test_unregistered_carries_a_millisecond_timestamp(fresh, credentials):
    before = int(time.time() * 1000)
    with fresh.client() as client:
        now = apns_post(client, credentials.jwt(), token="410a" + TOKEN[4:])
        fixed = apns_post(client, credentials.jwt(), token="dead" + TOKEN[4:])  # a rule from the config
    assert now.status_code == 410 and now.json()["reason"] == "Unregistered"
    assert before <= now.json()["timestamp"] <= int(time.time() * 1000)
    assert fixed.json() == {"reason": "Unregistered", "timestamp": FIXED_TIMESTAMP}


def test_flaky_token_fails_twice_with_retry_after_then_succeeds(fresh, credentials):
    token = "fa11" + TOKEN[4:]
    with fresh.client() as client:
        answers = [apns_post(client, credentials.jwt(), token=token) for _ in range(3)]
        other = apns_post(client, credentials.jwt(), token="fa1100" + TOKEN[6:])  # counted per exact token
    assert [a.status_code for a in answers] == [503, 503, 200]
    assert answers[0].headers["retry-after"] == "1" and reason(answers[0]) == "ServiceUnavailable"
    assert other.status_code == 503
    fresh.admin("/reset", "POST")  # also resets the attempt counters
    with fresh.client() as client:
        assert apns_post(client, credentials.jwt(), token=token).status_code == 503


def test_slow_token_answers_after_the_delay(fresh, credentials):
    with fresh.client() as client:
        started = time.monotonic()
        response = apns_post(client, credentials.jwt(), token="5100" + TOKEN[4:])
    assert response.status_code == 200 and time.monotonic() - started >= 0.3


def test_bad_device_token_per_environment(fresh, credentials):
    """A token of the other environment: BadDeviceToken there, accepted in its own. The
    sandbox host is the ``/sandbox`` path prefix."""
    sandbox_token = "5bd0" + TOKEN[4:]
    production_token = "9bd0" + TOKEN[4:]
    headers = [("authorization", f"bearer {credentials.jwt()}"), ("apns-topic", TOPIC), ("apns-push-type", "alert")]
    body = b'{"aps":{"alert":{"title":"t","body":"b"}}}'
    with fresh.client() as client:
        in_production = apns_post(client, credentials.jwt(), token=sandbox_token)
        in_sandbox = client.post(f"/sandbox/3/device/{sandbox_token}", headers=headers, content=body)
        other_in_sandbox = client.post(f"/sandbox/3/device/{production_token}", headers=headers, content=body)
        other_in_production = apns_post(client, credentials.jwt(), token=production_token)
    assert (in_production.status_code, reason(in_production)) == (400, "BadDeviceToken")
    assert in_sandbox.status_code == 200
    assert (other_in_sandbox.status_code, reason(other_in_sandbox)) == (400, "BadDeviceToken")
    assert other_in_production.status_code == 200
    pushes = fresh.admin("/pushes?since=0")["pushes"]
    assert [(p["token"], p["environment"]) for p in pushes] == [(sandbox_token, "sandbox"), (production_token, "production")]


def test_expired_provider_token_on_demand(fresh, credentials):
    """A config rule can answer ExpiredProviderToken (403) for chosen tokens, for a number of
    attempts, to test that a refused token renewal is retried later rather than dropped."""
    from emulator.apns import REASON_STATUS
    from emulator.rules import parse_rule
    rule = parse_rule({"prefix": "e4e0", "reason": "ExpiredProviderToken", "fail_times": 2}, "t", REASON_STATUS.get)
    assert (rule.status, rule.reason, rule.fail_times) == (403, "ExpiredProviderToken", 2)
    with pytest.raises(Exception):
        parse_rule({"prefix": "x", "reason": "BadDeviceToken", "environment": "staging"}, "t", REASON_STATUS.get)
