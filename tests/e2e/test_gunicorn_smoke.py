"""The API as it is deployed: gunicorn with two workers, real HTTP, the test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

GUNICORN = Path(sys.executable).with_name("gunicorn")
CONF = Path(__file__).resolve().parents[2] / "services" / "api" / "gunicorn.conf.py"  # as deployed
BODY = {
    "amount": 19.99,
    "token": "USDC",
    "network": "BASE",
    "customer_email": "smoke@example.com",
    "metadata": {"order": "smoke-1"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen, log: Path, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or workers still booting
            pass
        time.sleep(0.1)
    pytest.fail(f"gunicorn not ready within {deadline_s}s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(base_env, stack_database_url, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    env = {
        **os.environ,
        **base_env,
        "DATABASE_URL": stack_database_url,
        "PUBLIC_API_URL": f"http://127.0.0.1:{port}/v1/api",
        "CHECKOUT_URL": f"http://127.0.0.1:{port}",
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(GUNICORN),
                "-c",
                str(CONF),
                "-w",
                "2",
                "-b",
                f"127.0.0.1:{port}",
                "--graceful-timeout",
                "5",
                "kassa_api.wsgi:app",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc, log)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_payment_lifecycle_over_http(server, merchant):
    api = requests.Session()
    api.headers["X-Api-Key"] = merchant.test_key

    created = api.post(f"{server}/v1/api/payments", json=BODY, headers={"Idempotency-Key": "smoke-1"}, timeout=10)
    assert created.status_code == 201, created.text
    payment = created.json()["data"]
    assert payment["status"] == "PENDING" and payment["checkout_url"] == f"{server}/pay/{payment['short_id']}"
    assert created.headers["X-Request-Id"]

    replay = api.post(f"{server}/v1/api/payments", json=BODY, headers={"Idempotency-Key": "smoke-1"}, timeout=10)
    assert replay.status_code == 201 and replay.json()["data"]["id"] == payment["id"]

    got = api.get(f"{server}/v1/api/payments/{payment['short_id']}", timeout=10)
    assert got.status_code == 200 and got.json()["data"]["metadata"] == {"order": "smoke-1"}

    listed = api.get(f"{server}/v1/api/payments", params={"search": "smoke@", "pageSize": 5}, timeout=10).json()
    assert [p["id"] for p in listed["data"]["data"]] == [payment["id"]]
    assert listed["data"]["meta"] == {"page": 1, "pageSize": 5, "total": 1, "pages": 1}

    canceled = api.post(f"{server}/v1/api/payments/{payment['id']}/cancel", timeout=10)
    assert canceled.status_code == 200 and canceled.json()["data"]["status"] == "CANCELED"
    again = api.post(f"{server}/v1/api/payments/{payment['id']}/cancel", timeout=10)
    assert again.status_code == 409 and again.json()["error"]["code"] == "CONFLICT"


def test_errors_and_meta_endpoints_over_http(server, merchant):
    unauthorized = requests.get(f"{server}/v1/api/payments", timeout=10)
    assert unauthorized.status_code == 401 and unauthorized.json()["error"]["code"] == "UNAUTHORIZED"
    too_big = requests.post(
        f"{server}/v1/api/payments",
        data=b"{" + b" " * (70 * 1024) + b"}",
        headers={"Content-Type": "application/json", "X-Api-Key": merchant.test_key},
        timeout=10,
    )
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    long_query = requests.get(
        f"{server}/v1/api/payments", params={"search": "x" * 5000}, headers={"X-Api-Key": merchant.test_key}, timeout=10
    )
    assert long_query.status_code == 414 and long_query.json()["error"]["code"] == "URI_TOO_LONG"
    missing = requests.get(f"{server}/v1/api/nothing", timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    assert requests.get(f"{server}/v1/api/networks", timeout=10).status_code == 200
    assert requests.get(f"{server}/v1/api/openapi.json", timeout=10).json()["servers"] == [{"url": f"{server}/v1/api"}]
    assert requests.get(f"{server}/healthz", timeout=10).json() == {"status": "ok"}
