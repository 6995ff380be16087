"""The Bitcoin-family chain watcher end to end, every test twice: on BITCOIN_REGTEST (the
regtest double, or a real bitcoind -regtest when BITCOIN_RPC_URL is set) and on
LOCAL_LITECOIN (a real litecoind -regtest): mempool → seen, 2 confirmations → completed,
reorgs, replacements, dropped transactions."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kassa_common.messaging.relay import relay_pending
from tests.support.bitcoin_rpc import regtest_node  # noqa: F401  (fixture)
from tests.support.litecoind import litecoin_node, litecoind  # noqa: F401  (fixtures)
from tests.support.wait import until
from tests.support.watcher import live_utxo_fixture

h = live_utxo_fixture()


def btc(p) -> Decimal:
    """What payment ``p`` is due, in the coin (BTC, LTC)."""
    return Decimal(p["crypto_amount"])


def vout_to(h, txid: str, address: str) -> int:
    """The output of ``txid`` paying ``address``, as the node says."""
    (n,) = [o["n"] for o in h.node.rpc.getrawtransaction(txid, True)["vout"] if address in _addresses(o)]
    return n


def _addresses(out) -> list[str]:
    script = out["scriptPubKey"]
    return [script["address"]] if "address" in script else script.get("addresses", [])


def test_full_payment_is_seen_in_the_mempool_and_completes_at_two_confirmations(h):
    p = h.create(amount=60, token=h.coin)
    assert p["address"].startswith(f"{h.hrp}1")
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
    assert transfer.log_index == vout_to(h, txid, p["address"])  # the double's is 0; a real node's is random


def test_partial_payment_then_the_rest(h):
    p = h.create(amount=60, token=h.coin)
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
    p = h.create(amount=60, token=h.coin)
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


def restart_watcher_after(h, change):
    """Stop the watcher, ``change`` the node while nothing watches, start a new watcher process."""
    h.watcher.stop()
    until(lambda: not h.watcher.active.is_set(), message="watcher stopped")
    result = change()
    h.watcher = h.start_watcher()
    until(h.watcher.active.is_set, message="watcher active again")
    return result


def cancel(h, pid):
    return h.client.post(f"/v1/api/payments/{pid}/cancel", headers=h.merchant.headers("live"))


def test_a_transaction_dropped_from_the_mempool_while_the_watcher_is_down_releases_the_payment(h):
    p = h.create(amount=60, token=h.coin)
    txid = h.node.send(p["address"], btc(p))
    until(lambda: h.payment(p["id"]).transaction_hash == txid, message="seen in the mempool")
    assert cancel(h, p["id"]).status_code == 409  # held open by the seen transfer
    restart_watcher_after(h, lambda: h.node.drop_tx(txid))
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message="dropped transfer orphaned")
    paid = h.payment(p["id"])
    assert paid.status == "PENDING" and paid.transaction_hash is None and paid.confirmations == 0
    r = cancel(h, p["id"])
    assert r.status_code == 200 and r.get_json()["data"]["status"] == "CANCELED"


def test_a_fee_bumped_replacement_is_counted_once_and_the_replaced_transaction_never(h):
    p = h.create(amount=60, token=h.coin)
    first = h.node.send(p["address"], btc(p))
    until(lambda: h.payment(p["id"]).transaction_hash == first, message="seen in the mempool")
    second = restart_watcher_after(h, lambda: h.node.bump_fee(first))
    assert second != first
    until(
        lambda: {t.tx_hash: t.status for t in h.transfers(p["id"])} == {first: "ORPHANED", second: "SEEN"},
        message="replacement seen, the replaced one orphaned",
    )
    assert h.payment(p["id"]).transaction_hash == second
    h.node.mine(2)
    h.wait_status(p["id"], "COMPLETED")
    paid = h.payment(p["id"])
    assert paid.transaction_hash == second and paid.amount_received_units == paid.crypto_amount_units
    assert {t.tx_hash: t.status for t in h.transfers(p["id"])} == {first: "ORPHANED", second: "CONFIRMED"}


def detected(h, pid) -> int:
    return h.events(pid).count("payment.detected")


def test_a_transaction_dropped_and_broadcast_again_is_seen_again_each_time(h):
    if not h.node.can_evict:
        pytest.skip("this node cannot drop a transaction and take the same one back")
    p = h.create(amount=60, token=h.coin)
    txid = h.node.send(p["address"], btc(p))
    raw = h.node.raw(txid)
    until(lambda: h.payment(p["id"]).transaction_hash == txid, message="seen in the mempool")
    for round_ in (1, 2):
        h.node.evict(txid)  # the double drops it; litecoind restarts with an empty mempool
        until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message=f"dropped ({round_})")
        assert h.payment(p["id"]).transaction_hash is None
        assert h.node.broadcast(raw) == txid  # the very same transaction, broadcast again
        until(lambda: [t.status for t in h.transfers(p["id"])] == ["SEEN"], message=f"seen again ({round_})")
        assert h.payment(p["id"]).transaction_hash == txid and detected(h, p["id"]) == round_ + 1
        assert cancel(h, p["id"]).status_code == 409  # held open again
    h.node.mine(2)
    h.wait_status(p["id"], "COMPLETED")
    assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]


def test_an_address_that_reaches_the_watcher_after_its_transaction_entered_the_mempool_is_matched(h):
    known = h.create(amount=60, token=h.coin)
    body = {"amount": 60, "token": h.coin, "network": h.network}
    r = h.client.post("/v1/api/payments", json=body, headers=h.merchant.headers("live"))
    assert r.status_code == 201
    late = r.get_json()["data"]  # its payment.created is not relayed yet: the watcher does not know it
    first = h.node.send(late["address"], btc(late))
    second = h.node.send(known["address"], btc(known))
    # the watcher has read the mempool with both transactions in it
    until(lambda: h.payment(known["id"]).transaction_hash == second, message="the known payment seen")

    relay_pending(h.sessions, h.publisher)  # now the late address reaches the watcher

    until(lambda: h.payment(late["id"]).transaction_hash == first, message="the late payment seen in the mempool")
    assert [t.status for t in h.transfers(late["id"])] == ["SEEN"] and h.status(late["id"]) == "PENDING"
    h.node.mine(2)
    h.wait_status(late["id"], "COMPLETED")
