"""--workers: connections spread over processes must behave like one emulator."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import TOKEN, access_token, apns_post, fcm_send, start_emulator


@pytest.fixture(scope="module")
def workers(credentials, tmp_path_factory):
    running = start_emulator(tmp_path_factory.mktemp("workers"), credentials.config, "--workers", "2")
    yield running
    assert running.stop() == 0


def test_pushes_are_visible_as_soon_as_accepted_and_in_order(workers, credentials):
    workers.admin("/reset", "POST")
    clients = [workers.client() for _ in range(4)]  # consecutive connections alternate workers
    try:
        for i in range(12):
            token = f"{TOKEN[:-2]}{i:02x}"
            assert apns_post(clients[i % 4], credentials.jwt(), token=token).status_code == 200
            assert workers.admin("/pushes?since=0")["pushes"][-1]["token"] == token
    finally:
        for client in clients:
            client.close()
    pushes = workers.admin("/pushes?since=0")["pushes"]
    assert [p["token"][-2:] for p in pushes] == [f"{i:02x}" for i in range(12)]
    assert [p["seq"] for p in pushes] == list(range(pushes[0]["seq"], pushes[0]["seq"] + 12))
    stats = workers.admin("/stats")
    assert stats["workers"] == 2 and stats["total_accepted"] == 12


def test_attempt_counters_are_shared_between_workers(workers, credentials):
    workers.admin("/reset", "POST")
    token = "fa11" + TOKEN[4:]
    with workers.client() as first, workers.client() as second:  # one per worker
        statuses = [apns_post(first, credentials.jwt(), token=token).status_code,
                    apns_post(second, credentials.jwt(), token=token).status_code,
                    apns_post(first, credentials.jwt(), token=token).status_code,
                    apns_post(second, credentials.jwt(), token=token).status_code]
    assert statuses == [503, 503, 200, 200]


def test_access_tokens_work_on_every_worker_and_revocation_reaches_all(workers, credentials):
    with workers.client() as first, workers.client() as second:
        bearer = access_token(first, credentials.service_account)
        message = {"token": "device-1", "data": {"a": "b"}}
        assert fcm_send(first, bearer, message).status_code == 200
        assert fcm_send(second, bearer, message).status_code == 200
        workers.admin("/revoke-tokens", "POST")
        assert fcm_send(first, bearer, message).status_code == 401
        assert fcm_send(second, bearer, message).status_code == 401


def test_reset_clears_every_worker(workers, credentials):
    with workers.client() as first, workers.client() as second:
        apns_post(first, credentials.jwt())
        apns_post(second, credentials.jwt())
    assert workers.admin("/stats")["total_requests"] >= 2
    workers.admin("/reset", "POST")
    stats = workers.admin("/stats")
    assert stats["total_requests"] == 0 and workers.admin("/pushes?since=0")["pushes"] == []


def _process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_cpu_seconds_add_up_every_process(workers, credentials):
    parent = workers.process.pid
    children = [int(pid) for task in Path(f"/proc/{parent}/task").iterdir()
                for pid in (task / "children").read_text().split()]
    assert len(children) == 2
    # The workers must have done enough that leaving them out (or counting them twice) is
    # plainly outside the tolerance below. How many pushes that takes depends on the host, so
    # push until /proc says so rather than a fixed number (a fast machine did 400 in 0.09 s).
    with workers.client() as first, workers.client() as second:  # one per worker
        for _ in range(100):
            if sum(_process_cpu_seconds(pid) for pid in children) >= 0.3:
                break
            for _ in range(50):
                apns_post(first, credentials.jwt())
                apns_post(second, credentials.jwt())
    parent_before = _process_cpu_seconds(parent)
    workers_before = sum(_process_cpu_seconds(pid) for pid in children)
    reported = workers.admin("/stats")["cpu_seconds"]
    after = sum(_process_cpu_seconds(pid) for pid in [parent, *children])
    readings = (f"reported {reported}, /proc before: parent {parent_before}, "
                f"workers {workers_before}; /proc after: all {after}")
    # CPU time only grows, so the report lies between the two readings, give or take how the
    # kernel shows it: /proc truncates user and system time to whole ticks each (up to two
    # ticks short per process, three processes), the report is the process clock rounded to
    # milliseconds, and under load the two were seen up to 5% apart.
    slack = 3 * 2 / os.sysconf("SC_CLK_TCK") + 0.001
    assert workers_before >= 0.3, readings
    assert reported >= 0.95 * (parent_before + workers_before) - 0.001, readings
    assert reported <= 1.05 * after + slack, readings
    assert workers.admin("/stats")["cpu_seconds"] >= reported
