"""``kassa dev pay``: pays a live LOCAL_EVM payment on anvil from its first account."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from kassa_common import cli
from kassa_common.chains.hd import TEST_XPUBS
from kassa_dev.chain import token_balance
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.api import set_live_wallet


@pytest.fixture
def live(anvil_isolated, base_env, monkeypatch, app, make_merchant, sessions):
    for name, value in {**base_env, "LOCAL_EVM_RPC_URL": anvil_isolated.url}.items():
        monkeypatch.setenv(name, value)
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm", TEST_XPUBS["evm"])
    return anvil_isolated, app.test_client(), merchant


def create(client, merchant, amount=12.34) -> dict:
    r = client.post(
        "/v1/api/payments",
        json={"amount": amount, "token": "USDC", "network": "LOCAL_EVM"},
        headers=merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def test_dev_pay_sends_the_amount_due_to_the_payment_address(live, capsys):
    chain, client, merchant = live
    p = create(client, merchant)
    assert cli.main(["--json", "dev", "pay", p["short_id"]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["amount"] == "12.340000" and out["tx_hash"].startswith("0x")
    assert token_balance(chain.w3, chain.tokens["USDC"], p["address"]) == 12_340_000


def test_dev_pay_with_an_amount_pays_that_amount(live, capsys):
    chain, client, merchant = live
    p = create(client, merchant)
    assert cli.main(["dev", "pay", p["short_id"], "--amount", "1.5", "--json"]) == 0
    assert Decimal(json.loads(capsys.readouterr().out)["amount"]) == Decimal("1.5")
    assert token_balance(chain.w3, chain.tokens["USDC"], p["address"]) == 1_500_000


def test_dev_pay_refuses_an_unknown_payment(live, capsys):
    assert cli.main(["dev", "pay", "NOSUCHID"]) == 1
    assert "no payment" in capsys.readouterr().err
