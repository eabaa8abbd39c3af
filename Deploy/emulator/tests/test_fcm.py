"""Google OAuth2 service-account grants and FCM HTTP v1 sends."""
from __future__ import annotations

import json
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import access_token, fcm_send
from emulator.testkit import make_oauth_assertion

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
MESSAGE = {"token": "device-1", "data": {"title": "Hi", "body": "{\"k\":\"v\"}"},
           "android": {"priority": "HIGH", "ttl": "3600s", "collapse_key": "c"}}


@pytest.fixture()
def bearer(fresh, credentials) -> str:
    with fresh.client() as client:
        return access_token(client, credentials.service_account)


def grant(client, assertion: str, grant_type: str = JWT_BEARER):
    return client.post("/token", data={"grant_type": grant_type, "assertion": assertion})


def test_token_endpoint_issues_bearer_tokens(fresh, credentials):
    with fresh.client() as client:
        # the service account's own token_uri is a valid audience too
        response = grant(client, make_oauth_assertion(credentials.service_account))
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["access_token"]


def test_token_endpoint_refusals(fresh, credentials):
    account = credentials.service_account
    stranger = dict(account, private_key=rsa.generate_private_key(public_exponent=65537, key_size=2048)
                    .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()).decode())
    audience = f"{fresh.url}/token"
    now = int(time.time())
    cases = {
        "bad signature": (make_oauth_assertion(stranger, audience), "invalid_grant"),
        "unknown account": (make_oauth_assertion(dict(account, client_email="who@x.iam.gserviceaccount.com"),
                                                 audience), "invalid_grant"),
        "wrong audience": (make_oauth_assertion(account, "https://example.com/token"), "invalid_grant"),
        "too long-lived": (make_oauth_assertion(account, audience, lifetime=7200), "invalid_grant"),
        "expired": (make_oauth_assertion(account, audience, issued_at=now - 7200), "invalid_grant"),
        "not a JWT": ("abc", "invalid_grant"),
        "other scope": (make_oauth_assertion(account, audience, scope="https://www.googleapis.com/auth/drive"),
                        "invalid_scope"),
    }
    with fresh.client() as client:
        for name, (assertion, error) in cases.items():
            response = grant(client, assertion)
            assert response.status_code == 400, name
            assert response.json()["error"] == error and response.json()["error_description"], name
        wrong_grant = grant(client, make_oauth_assertion(account, audience), grant_type="client_credentials")
    assert (wrong_grant.status_code, wrong_grant.json()["error"]) == (400, "unsupported_grant_type")


def test_send_is_accepted_and_recorded(fresh, bearer):
    with fresh.client() as client:
        response = fcm_send(client, bearer, MESSAGE)
    assert response.status_code == 200
    name = response.json()["name"]
    assert name.startswith("projects/demo-project/messages/0:")
    [push] = fresh.admin("/pushes?since=0")["pushes"]
    assert push["service"] == "fcm" and push["token"] == "device-1" and push["name"] == name
    assert json.loads(push["body"]) == {"message": MESSAGE}


def test_validate_only_is_answered_but_not_recorded(fresh, bearer):
    with fresh.client() as client:
        response = fcm_send(client, bearer, MESSAGE, validate_only=True)
    assert response.json() == {"name": "projects/demo-project/messages/fake_message_id"}
    assert fresh.admin("/pushes?since=0")["pushes"] == []


def test_authentication(fresh, credentials, bearer):
    with fresh.client() as client:
        missing = fcm_send(client, None, MESSAGE)
        bogus = fcm_send(client, "ya29.bogus", MESSAGE)
        other_project = fcm_send(client, access_token(client, credentials.other_service_account), MESSAGE)
        assert fcm_send(client, bearer, MESSAGE).status_code == 200
        fresh.admin("/revoke-tokens", "POST")
        revoked = fcm_send(client, bearer, MESSAGE)
    for response in (missing, bogus, revoked):
        assert response.status_code == 401
        assert response.json()["error"]["status"] == "UNAUTHENTICATED"
    assert other_project.status_code == 403
    assert other_project.json()["error"]["status"] == "PERMISSION_DENIED"


@pytest.mark.parametrize("message, field", [
    ({**MESSAGE, "data": {"count": 1}}, "message.data[0].value"),
    ({**MESSAGE, "data": {"from": "x"}}, "message.data"),
    ({**MESSAGE, "data": {"google.sent_time": "1"}}, "message.data"),
    ({**MESSAGE, "data": {"gcm.n.e": "1"}}, "message.data"),
    ({**MESSAGE, "data": {"message_type": "x"}}, "message.data"),
    ({**MESSAGE, "data": {"big": "x" * 4094}}, "message.data"),
    ({**MESSAGE, "android": {"ttl": "3600"}}, "message.android.ttl"),
    ({**MESSAGE, "android": {"ttl": "2419201s"}}, "message.android.ttl"),
    ({**MESSAGE, "android": {"ttl": "2419200.5s"}}, "message.android.ttl"),
    ({**MESSAGE, "android": {"priority": "URGENT"}}, "message.android.priority"),
    ({**MESSAGE, "android": {"priority": ["HIGH"]}}, "message.android.priority"),
    ({**MESSAGE, "android": {"colapse_key": "typo"}}, "message.android"),
    ({**MESSAGE, "token": ""}, "message.token"),
    ({"data": {"a": "b"}}, "message"),
    ({**MESSAGE, "topic": "news"}, "message.topic"),
])
def test_invalid_messages(fresh, bearer, message, field):
    with fresh.client() as client:
        response = fcm_send(client, bearer, message)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT" and error["message"]
    assert error["details"][0] == {"@type": FCM_ERROR, "errorCode": "INVALID_ARGUMENT"}
    assert error["details"][1]["@type"] == BAD_REQUEST
    assert error["details"][1]["fieldViolations"][0]["field"] == field


def test_data_at_the_limit_is_accepted(fresh, bearer):
    with fresh.client() as client:
        response = fcm_send(client, bearer, {"token": "device-2", "data": {"big": "x" * 4093}})
    assert response.status_code == 200


def test_ttl_at_the_limit_is_accepted(fresh, bearer):
    with fresh.client() as client:
        longest = fcm_send(client, bearer, {"token": "device-2", "android": {"ttl": "2419200s"}})
        none = fcm_send(client, bearer, {"token": "device-3", "android": {"ttl": "0s"}})
    assert (longest.status_code, none.status_code) == (200, 200)


@pytest.mark.parametrize("token, status, canonical, code", [
    ("unregistered-1", 404, "NOT_FOUND", "UNREGISTERED"),
    ("gone-1", 404, "NOT_FOUND", "UNREGISTERED"),  # a rule from the config file
    ("mismatch-1", 403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
    ("quota-1", 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
    ("unavailable-1", 503, "UNAVAILABLE", "UNAVAILABLE"),
    ("internal-1", 500, "INTERNAL", "INTERNAL"),
])
def test_scripted_failures(fresh, bearer, token, status, canonical, code):
    with fresh.client() as client:
        response = fcm_send(client, bearer, {**MESSAGE, "token": token})
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["status"]) == (status, status, canonical)
    assert {"@type": FCM_ERROR, "errorCode": code} in error["details"]
    if code == "QUOTA_EXCEEDED":
        assert response.headers["retry-after"] == "1"


def test_invalid_token_rule_names_the_token_field(fresh, bearer):
    with fresh.client() as client:
        response = fcm_send(client, bearer, {**MESSAGE, "token": "invalid-1"})
    error = response.json()["error"]
    assert response.status_code == 400 and error["status"] == "INVALID_ARGUMENT"
    assert error["details"] == [
        {"@type": FCM_ERROR, "errorCode": "INVALID_ARGUMENT"},
        {"@type": BAD_REQUEST, "fieldViolations": [
            {"field": "message.token",
             "description": "The registration token is not a valid FCM registration token"}]}]


def test_flaky_and_slow_tokens(fresh, bearer):
    with fresh.client() as client:
        answers = [fcm_send(client, bearer, {**MESSAGE, "token": "flaky-1"}) for _ in range(3)]
        started = time.monotonic()
        slow = fcm_send(client, bearer, {**MESSAGE, "token": "slow-1"})
    assert [a.status_code for a in answers] == [503, 503, 200]
    assert answers[0].headers["retry-after"] == "1"
    assert slow.status_code == 200 and time.monotonic() - started >= 0.3
