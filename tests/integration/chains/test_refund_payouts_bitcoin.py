"""A Bitcoin-family refund, on BITCOIN_REGTEST (the regtest double, or a real bitcoind
-regtest when BITCOIN_RPC_URL is set) and on LOCAL_LITECOIN (a real litecoind): the payout
of its ``payout_amount`` to the claimed address is seen in the mempool and completes the
refund at the network's confirmations (the bare amount does not); a refund completed by a
submitted txid, refused while it is unmined, checked on the node."""

from __future__ import annotations

import uuid
from decimal import Decimal

from kassa_common.db import unit_of_work
from kassa_common.models import Refund
from kassa_common.refunds import transitions
from tests.support.bitcoin_rpc import regtest_node  # noqa: F401  (fixture)
from tests.support.litecoind import litecoin_node, litecoind  # noqa: F401  (fixtures)
from tests.support.refund_payouts import claim, create_refund, get, status
from tests.support.wait import until
from tests.support.watcher import live_utxo_fixture

API = "/v1/api"


h = live_utxo_fixture()


def paid_btc(h) -> dict:
    p = h.create(amount=60, token=h.coin)
    h.node.send(p["address"], Decimal(p["crypto_amount"]))
    h.node.mine(2)
    h.wait_status(p["id"], "COMPLETED")
    return p


def test_a_bitcoin_refund_is_completed_by_its_payout_and_another_by_its_txid(h):
    p = paid_btc(h)
    refund = create_refund(h, p, amount="0.0001")
    address = h.node.new_address()
    claimed = claim(h, refund, address)
    due = Decimal(claimed["payout_amount"])
    assert Decimal("0.0001") < due < Decimal("0.0001") + Decimal("0.00001")  # 1-999 satoshis more
    bare = h.node.send(address, Decimal("0.0001"))  # the amount without its tag pays nothing
    txid = h.node.send(address, due)
    until(lambda: get(h, refund)["confirmations"] == 0 and status(h, refund) == "AWAITING_PAYMENT", message="waiting")
    h.node.mine(2)
    until(lambda: status(h, refund) == "COMPLETED", 30, message="refund completed")
    assert get(h, refund)["transaction_hash"] == txid != bare

    h.stop_watchers()  # the next one is completed by its txid alone
    second = create_refund(h, p, amount="0.0002")
    other = h.node.new_address()
    claim_without_watcher(h, second, other)
    sent = h.node.send(other, Decimal("0.0002"))  # at least the amount: a submitted txid needs no tag

    def complete(tx: str):
        return h.client.post(
            f"{API}/refunds/{second['id']}/complete", json={"transaction_hash": tx}, headers=h.merchant.headers("live")
        )

    r = complete(sent)
    assert r.status_code == 409 and "not yet confirmed" in r.get_json()["error"]["message"], r.get_json()
    r = complete(txid)  # pays the first refund's address
    assert r.status_code == 400 and "pays someone else" in r.get_json()["error"]["message"]
    h.node.mine(2)
    r = complete(sent)
    assert r.status_code == 200, r.get_data(as_text=True)
    assert (r.get_json()["data"]["status"], r.get_json()["data"]["transaction_hash"]) == ("COMPLETED", sent)


def claim_without_watcher(h, refund: dict, address: str) -> None:
    with unit_of_work(h.sessions) as s:
        transitions.claim_refund(
            s, s.get(Refund, uuid.UUID(refund["id"])).claim_token, address, registry=h.settings.networks
        )
