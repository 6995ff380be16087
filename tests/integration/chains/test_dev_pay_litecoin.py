"""``kassa dev pay`` on LOCAL_LITECOIN: pays a live payment from the regtest node's funded
wallet (the node ``make run`` starts; here the tests' real litecoind)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from kassa_common import cli
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.config import Settings
from tests.support.api import set_live_wallet
from tests.support.litecoind import litecoin_node, litecoind  # noqa: F401  (fixtures)


@pytest.fixture
def live(litecoind, litecoin_node, base_env, monkeypatch, engine, make_merchant, sessions):
    from kassa_api.app import create_app

    env = {**base_env, "LOCAL_LITECOIN_RPC_URL": litecoind.url}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "litecoin", TEST_XPUBS["litecoin"])
    return litecoin_node, create_app(Settings.from_env(env), engine=engine).test_client(), merchant


def create(client, merchant, amount=8) -> dict:
    body = {"amount": amount, "token": "LTC", "network": "LOCAL_LITECOIN"}
    r = client.post("/v1/api/payments", json=body, headers=merchant.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def paid_to(node, txid: str, address: str) -> Decimal:
    tx = node.rpc.getrawtransaction(txid, True)
    return sum((o["value"] for o in tx["vout"] if o["scriptPubKey"].get("addresses") == [address]), Decimal(0))


def test_dev_pay_sends_the_amount_due_to_the_payment_address(live, capsys):
    node, client, merchant = live
    p = create(client, merchant)
    assert p["address"].startswith("rltc1") and Decimal(p["crypto_amount"]) == Decimal("0.1")  # LTC=80
    assert cli.main(["--json", "dev", "pay", p["short_id"]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["token"], Decimal(out["amount"]), out["address"]) == ("LTC", Decimal("0.1"), p["address"])
    assert out["tx_hash"] in node.rpc.getrawmempool()
    assert paid_to(node, out["tx_hash"], p["address"]) == Decimal("0.1")


def test_dev_pay_with_an_amount_pays_that_amount(live, capsys):
    node, client, merchant = live
    p = create(client, merchant)
    assert cli.main(["dev", "pay", p["short_id"], "--amount", "0.025", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert paid_to(node, out["tx_hash"], p["address"]) == Decimal("0.025")


def test_make_run_starts_a_funded_litecoind_unless_one_answers(litecoind, capsys):
    from kassa_dev import litecoin
    from kassa_dev.run import start_local_litecoin

    assert start_local_litecoin({"LOCAL_LITECOIN_RPC_URL": litecoind.url}) is None  # one answers: used
    url = f"http://{litecoin.RPC_USER}:{litecoin.RPC_PASSWORD}@127.0.0.1:{litecoin.free_port()}"
    node = start_local_litecoin({"LOCAL_LITECOIN_RPC_URL": url})
    try:
        assert node is not None and litecoin.answers(url)
        rpc = node.rpc()
        assert rpc.call("getblockchaininfo")["softforks"]["mweb"]["active"] and rpc.call("getbalance") > 100
        rpc.close()
        assert "started litecoind -regtest" in capsys.readouterr().out
    finally:
        node.stop()
    assert not litecoin.answers(url) and not node.datadir.exists()


def test_without_litecoind_make_run_leaves_local_litecoin_off(monkeypatch, capsys):
    from kassa_dev import litecoin
    from kassa_dev.run import start_local_litecoin

    monkeypatch.setattr(litecoin.shutil, "which", lambda name: None)
    env = {"LOCAL_LITECOIN_RPC_URL": f"http://u:p@127.0.0.1:{litecoin.free_port()}"}
    assert start_local_litecoin(env) is None and "LOCAL_LITECOIN_RPC_URL" not in env
    assert "LOCAL_LITECOIN is off: litecoind is not installed" in capsys.readouterr().out
