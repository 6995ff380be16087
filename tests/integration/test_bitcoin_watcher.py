"""The Bitcoin chain watcher end to end on the regtest double (or a real bitcoind -regtest
when BITCOIN_RPC_URL is set): mempool → seen, 2 confirmations → completed, reorgs."""
from __future__ import annotations

from decimal import Decimal

import pytest

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.chains.networks import load_registry
from tests.support.api import set_live_wallet
from tests.support.bitcoin_rpc import regtest_node  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.watcher import harness

NETWORK = "BITCOIN_REGTEST"


@pytest.fixture
def h(settings, engine, sessions, make_merchant, regtest_node):  # noqa: F811
    env = {"BITCOIN_REGTEST_RPC_URL": regtest_node.url, "BITCOIN_REGTEST_CONFIRMATIONS": "2"}
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "bitcoin", TEST_XPUBS["bitcoin"])
    with harness(settings.with_(networks=load_registry(env)), engine, sessions, merchant, NETWORK) as h:
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        h.node, h.watcher = regtest_node, watcher
        yield h


def btc(p) -> Decimal:
    return Decimal(p["crypto_amount"])


def test_full_payment_is_seen_in_the_mempool_and_completes_at_two_confirmations(h):
    p = h.create(amount=60, token="BTC")
    assert p["address"].startswith("bcrt1")
    txid = h.node.send(p["address"], btc(p))
    until(lambda: "payment.detected" in h.events(p["id"]), message="seen in the mempool")
    assert h.status(p["id"]) == "PENDING"
    h.node.mine(1)
    until(lambda: h.payment(p["id"]).confirmations == 1, message="1 confirmation")
    assert h.status(p["id"]) == "PENDING"
    h.node.mine(1)
    h.wait_status(p["id"], "COMPLETED")
    paid = h.payment(p["id"])
    assert paid.transaction_hash == txid and paid.amount_received_units == paid.crypto_amount_units
    (transfer,) = h.transfers(p["id"])
    assert transfer.log_index == 0  # the double puts the payment at vout 0


def test_partial_payment_then_the_rest(h):
    p = h.create(amount=60, token="BTC")
    h.node.send(p["address"], btc(p) / 4)
    h.node.mine(2)
    h.wait_status(p["id"], "PARTIALLY_PAID")
    h.node.send(p["address"], btc(p) * 3 / 4)
    h.node.mine(2)
    h.wait_status(p["id"], "COMPLETED")
    paid = h.payment(p["id"])
    assert paid.amount_received_units == paid.crypto_amount_units
    assert len(h.transfers(p["id"])) == 2


def test_a_transfer_reorged_out_before_confirming_never_counts(h):
    p = h.create(amount=60, token="BTC")
    txid = h.node.send(p["address"], btc(p))
    h.node.mine(1)
    until(lambda: h.payment(p["id"]).confirmations == 1, message="1 confirmation")
    h.node.reorg_out(txid)
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message="transfer orphaned")
    h.node.mine(2)
    until(lambda: h.watcher.scanner.state.head == h.node.height(), message="watcher at the tip")
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message="still orphaned")
    paid = h.payment(p["id"])
    assert paid.status == "PENDING" and int(paid.amount_received_units) == 0
