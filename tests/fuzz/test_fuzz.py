"""``make fuzz``: the schemathesis command line against the real app, served over HTTP on
loopback from a migrated database with real objects, once with a test-mode key and once
with a live-mode key: every check (``--checks all``: no 5xx, status codes, content types,
headers and bodies as documented, invalid data refused, valid data accepted...), every
phase (examples, coverage, fuzzing, stateful), bounded by ``FUZZ_MAX_TIME`` seconds per
mode (default 120). Collected by the normal suite but skipped there unless KASSA_FUZZ=1
(the normal suite's bounded run is tests/integration/web/test_schemathesis.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.db import unit_of_work
from tests.support.api import API, LIVE_PAYMENT, PAYMENT
from tests.support.refunds import settle_confirmed

pytestmark = pytest.mark.skipif(os.environ.get("KASSA_FUZZ") != "1", reason="make fuzz runs this (KASSA_FUZZ=1)")
ROOT = Path(__file__).resolve().parents[2]
MAX_TIME = int(os.environ.get("FUZZ_MAX_TIME", "120"))


@pytest.fixture(scope="module")
def server(app):
    """The app (on the test database) served over HTTP on a free loopback port."""
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}"
    http.shutdown()


def _seed(app, sessions, mode: str) -> tuple[str, dict[str, str]]:
    """A key with every scope in ``mode`` and one object of each kind (a payment with
    confirmed funds and its refund, a product, a webhook endpoint, an event)."""
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, f"fuzz-{uuid.uuid4().hex[:10]}@example.com", None, "Fuzz Ltd", True)
        merchants.set_wallet(s, m.id, "live", "evm", TEST_XPUBS["evm"], allow_test_keys=True)
        key = keys.create_key(s, m.id, mode, list(keys.SCOPES)).key
    client, headers = app.test_client(), {"X-Api-Key": key}
    payment = client.post(f"{API}/payments", json=PAYMENT if mode == "test" else LIVE_PAYMENT, headers=headers)
    paid = payment.get_json()["data"]
    settle_confirmed(sessions, paid, 12_340_000)
    refund = client.post(f"{API}/payments/{paid['id']}/refunds", json={"amount": "1"}, headers=headers)
    product = client.post(f"{API}/products", json={"name": "Fuzzed", "price": 3}, headers=headers)
    hook = client.post(f"{API}/webhooks", json={"url": "https://hooks.example.com/fuzz"}, headers=headers)
    assert {r.status_code for r in (payment, refund, product, hook)} == {201}
    event = client.get(f"{API}/events", headers=headers).get_json()["data"]["data"][0]
    return key, {
        "payments": paid["id"],
        "refunds": refund.get_json()["data"]["id"],
        "products": product.get_json()["data"]["id"],
        "webhooks": hook.get_json()["data"]["id"],
        "event_id": event["id"],
    }


@pytest.mark.parametrize("mode", ["test", "live"])
def test_schemathesis_finds_nothing(app, sessions, server, mode, tmp_path):
    key, ids = _seed(app, sessions, mode)
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(Path(__file__).with_name("schemathesis.toml")),
        "run",
        f"{server}{API}/openapi.json",
        "--header",
        f"X-Api-Key: {key}",
        "--checks",
        "all",
        "--mode",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--max-time",
        str(MAX_TIME),
        "--workers",
        "2",
        "--suppress-health-check",
        "all",
        "--max-response-time",
        "5",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path),
        "--no-color",
        "--seed",
        os.environ.get("FUZZ_SEED", "31"),
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.fuzz_hooks", "KASSA_FUZZ_IDS": json.dumps(ids)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    timeout = MAX_TIME * 3 + 120  # the run stops itself at MAX_TIME; this only catches a hang
    run = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    print(run.stdout[-20000:])
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
