"""A refund from end to end on a `make run`-like stack (every Procfile process, the chain
watcher included, anvil with 1 s blocks and the dev tokens): an over-paid USDC payment is
refunded in part through the API, the customer claims it on the claim page in Chromium, the merchant
pays its ``payout_amount`` with ``kassa dev pay-refund`` (a real transaction from anvil's second account), the
watcher sees the payout and the refund is COMPLETED with its hash; ``refund.created``,
``refund.claimed`` and ``refund.completed`` reach the merchant's receiver signed, and the
payment shows ``refunded_amount``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from kassa_common import envfile
from kassa_common.accounts import keys, merchants
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory, unit_of_work
from kassa_common.webhooks.signing import verify_signature
from kassa_dev import chain as devchain
from kassa_dev.run import DEV_DEFAULTS, dev_settings
from tests.conftest import fresh_database
from tests.support.anvil import start_chain
from tests.support.api import set_live_wallet
from tests.support.bus import private_topology
from tests.support.receiver import Receiver
from tests.support.stack import Stack
from tests.support.wait import until

pytestmark = pytest.mark.slow
CUSTOMER = 3  # anvil's account: the customer's own wallet


@pytest.fixture
def chain_stack(tmp_path, base_env):
    anvil = start_chain(block_time=1)
    try:
        with fresh_database("refund_") as database_url, private_topology(base_env["RABBITMQ_URL"]) as (prefix, _):
            env = {
                **DEV_DEFAULTS,
                "DATABASE_URL": database_url,
                "RABBITMQ_URL": base_env["RABBITMQ_URL"],
                "BUS_PREFIX": prefix,
                "LOCAL_EVM_RPC_URL": anvil.url,
                "LOCAL_EVM_CONFIRMATIONS": "2",
                "DB_POOL_SIZE": "3",
                "WEBHOOK_RETRY_SCHEDULE": "1,1,1,1",
            }
            (tmp_path / "logs").mkdir()
            stack = Stack(env, tmp_path / "logs")
            terminal = tmp_path / "terminal"
            terminal.mkdir()
            run_env = {**env, **{k: stack.env[k] for k in ("PUBLIC_API_URL", "CHECKOUT_URL", "DASHBOARD_URL")}}
            envfile.write(terminal / ".env", dev_settings(run_env, Settings.from_env(run_env)))  # as make run does
            engine = make_engine(database_url, pool_size=2)
            try:
                stack.start_all()
                stack.start("chain-watcher")
                yield stack, terminal, anvil, make_session_factory(engine)
            finally:
                stack.stop_all()
                engine.dispose()
    finally:
        devchain.stop_anvil(anvil.proc)


def kassa(terminal: Path, *args: str) -> str:
    """The ``kassa`` command in the second terminal (it reads the stack's ``.env`` there)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "kassa"), *args],
        cwd=terminal,
        env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},  # no Kassa setting
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def signed(hit, secret: str) -> bool:
    return verify_signature(secret, hit.headers["X-Kassa-Signature"], hit.body, tolerance=None)


def test_an_over_paid_usdc_payment_is_refunded_in_part_on_chain(chain_stack, browser):
    stack, terminal, anvil, sessions = chain_stack
    receiver = Receiver()
    try:
        with unit_of_work(sessions) as s:
            merchant = merchants.create_merchant(s, f"r-{uuid.uuid4().hex[:8]}@example.com", None, "Corner Shop", True)
            key = keys.create_key(s, merchant.id, "live", list(keys.SCOPES)).key
            merchant_id = merchant.id
        set_live_wallet(sessions, merchant_id)
        api, h = stack.api, {"X-Api-Key": key}
        hook = requests.post(f"{api}/webhooks", json={"url": receiver.url}, headers=h, timeout=10).json()["data"]

        p = requests.post(
            f"{api}/payments", json={"amount": 5, "token": "USDC", "network": "LOCAL_EVM"}, headers=h, timeout=10
        ).json()["data"]
        kassa(terminal, "dev", "pay", p["short_id"], "--amount", "7")  # 2 USDC too much
        until(
            lambda: (
                requests.get(f"{api}/payments/{p['id']}", headers=h, timeout=5).json()["data"]["status"] == "COMPLETED"
            ),
            60,
            message="the payment completed",
        )

        r = requests.post(
            f"{api}/payments/{p['id']}/refunds", json={"amount": "2", "reason": "paid too much"}, headers=h, timeout=10
        )
        assert r.status_code == 201, r.text
        refund = r.json()["data"]

        address = anvil.accounts[CUSTOMER]
        context = browser.new_context(viewport={"width": 390, "height": 844})  # the customer, on a phone
        try:
            phone = context.new_page()
            phone.goto(refund["claim_url"])
            expect(phone.locator("body")).to_contain_text("2 USDC")
            phone.fill("#address", address)
            phone.get_by_role("button", name="Claim the refund").click()
            expect(phone.locator("body")).to_contain_text(address)
        finally:
            context.close()
        claimed = requests.get(f"{api}/refunds/{refund['id']}", headers=h, timeout=5).json()["data"]
        assert (claimed["status"], claimed["address"]) == ("AWAITING_PAYMENT", address)
        due = int(Decimal(claimed["payout_amount"]) * 10**6)  # the amount plus its tag
        assert 2_000_000 < due < 2_001_000

        before = devchain.token_balance(anvil.w3, anvil.tokens["USDC"], address)
        out = kassa(terminal, "dev", "pay-refund", refund["id"], "--json")
        tx = json.loads(out)["tx_hash"]
        assert devchain.token_balance(anvil.w3, anvil.tokens["USDC"], address) == before + due
        assert anvil.w3.eth.get_transaction(tx)["from"] == anvil.accounts[1]

        def completed() -> dict | None:
            got = requests.get(f"{api}/refunds/{refund['id']}", headers=h, timeout=5).json()["data"]
            return got if got["status"] == "COMPLETED" else None

        done_refund = until(completed, 60, message="the refund completed by its payout")
        assert done_refund["transaction_hash"] == tx
        payment = requests.get(f"{api}/payments/{p['id']}", headers=h, timeout=5).json()["data"]
        assert (payment["refunded_amount"], payment["refundable_amount"]) == ("2", "5")

        for kind in ("refund.created", "refund.claimed", "refund.completed"):
            until(lambda k=kind: receiver.events(k), 30, message=f"{kind} at the receiver")
        (completed_hit,) = receiver.events("refund.completed")
        assert completed_hit.json["data"]["transaction_hash"] == tx and completed_hit.json["data"]["id"] == refund["id"]
        for kind in ("refund.created", "refund.claimed", "refund.completed"):
            assert all(signed(hit, hook["secret"]) for hit in receiver.events(kind)), kind
    finally:
        receiver.close()
