"""Reorgs the confirmation count does not cover, on anvil with the real watcher and settler.

- A reorg deeper than the required confirmations takes a confirmed transfer away: the
  transfer is recorded as lost (``REORGED``, not counted), ``payment.reorged`` fires with
  the payment object showing it, ``amount_received`` drops to what still stands, the
  status stays (the merchant decides), the operator gets an ERROR log and the metric moves.
  Mined again, the transfer counts again.
- A reorg in the window between the watcher's check of its head and its reading of the
  next blocks: the parent-hash check of the new batch catches it, and the transfer of the
  orphaned block is never confirmed.
"""

from __future__ import annotations

import logging
import uuid

import sqlalchemy as sa
from prometheus_client import REGISTRY

from kassa_common.models import Event
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.rpc_proxy import RpcProxy
from tests.support.wait import until
from tests.support.watcher import live_evm, live_evm_fixture, pay_usdc, units_due

CONFIRMATIONS = 2


def reorged() -> tuple[float, float]:
    labels = {"network": "LOCAL_EVM"}
    return (
        REGISTRY.get_sample_value("kassa_chain_deep_reorgs_total", labels) or 0,
        REGISTRY.get_sample_value("kassa_chain_transfers_reorged_total", labels) or 0,
    )


def payment_events(h, pid, kind) -> list[dict]:
    with h.sessions() as s:
        return list(s.scalars(sa.select(Event.payload).where(Event.payment_id == uuid.UUID(pid), Event.type == kind)))


h = live_evm_fixture(CONFIRMATIONS)


def test_a_confirmed_transfer_lost_in_a_deep_reorg_is_recorded_announced_and_alerted(h, chain, caplog):
    caplog.set_level(logging.ERROR)
    chain.mine(5)
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    p = h.create(amount=5)
    tx = pay_usdc(chain, p)
    block = chain.w3.eth.get_transaction_receipt(tx)["blockNumber"]
    chain.mine(CONFIRMATIONS)
    h.wait_status(p["id"], "COMPLETED")
    until(lambda: watcher.scanner.state.confirmed_through >= block, message="the transfer's block confirmed")
    before = reorged()

    chain.reorg(chain.block_number - block + 2)  # from the block below the transfer's: deeper than the confirmations
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["REORGED"], 30, message="the transfer lost")
    until(lambda: "payment.reorged" in h.events(p["id"]), message="payment.reorged fired")

    paid = h.payment(p["id"])
    assert paid.status == "COMPLETED"  # a delivered order is not silently un-completed
    assert int(paid.amount_received_units) == 0 and paid.transaction_hash is None
    (event,) = payment_events(h, p["id"], "payment.reorged")
    (shown,) = event["data"]["transfers"]
    assert (shown["tx_hash"], shown["status"], shown["counted"]) == (tx, "REORGED", False)
    assert "reorganisation deeper than the required confirmations" in shown["reason"]
    assert event["data"]["amount_received"] == "0"
    api = h.client.get(f"/v1/api/payments/{p['id']}", headers=h.merchant.headers("live")).get_json()["data"]
    assert api["transfers"][0]["status"] == "REORGED" and api["status"] == "COMPLETED"
    deep, lost = reorged()
    assert deep == before[0] + 1 and lost == before[1] + 1
    assert "reorg below the confirmed line" in caplog.text and tx in caplog.text
    assert f"confirmed transfer {tx} on LOCAL_EVM lost in a reorg" in caplog.text

    chain.mine(CONFIRMATIONS + 1)  # nothing more happens: the event fires once
    until(lambda: watcher.scanner.state.head == chain.block_number, message="watcher at the tip")
    assert h.events(p["id"]).count("payment.reorged") == 1


def test_a_transfer_lost_in_a_deep_reorg_and_mined_again_counts_again(h, chain):
    chain.mine(5)
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    p = h.create(amount=6)
    tx = pay_usdc(chain, p)
    raw = chain.raw_transaction(tx)
    block = chain.w3.eth.get_transaction_receipt(tx)["blockNumber"]
    chain.mine(CONFIRMATIONS)
    h.wait_status(p["id"], "COMPLETED")
    until(lambda: watcher.scanner.state.confirmed_through >= block, message="the transfer's block confirmed")
    depth = chain.block_number - block + 2
    chain.reorg(depth, [(raw, depth - 1)])  # lost, then back in the last block of the new branch
    until(lambda: "payment.reorged" in h.events(p["id"]), 30, message="payment.reorged fired")
    chain.mine(CONFIRMATIONS)
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"], 30, message="confirmed again")
    paid = h.payment(p["id"])
    assert paid.status == "COMPLETED" and int(paid.amount_received_units) == units_due(p)
    assert h.events(p["id"]).count("payment.completed") == 1


def test_a_reorg_right_after_the_head_check_never_confirms_the_orphaned_transfer(
    settings, engine, sessions, make_merchant, chain
):
    with (
        RpcProxy(chain.url) as proxy,
        live_evm(settings, engine, sessions, make_merchant, proxy.url(), CONFIRMATIONS) as h,
    ):
        chain.mine(5)
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        p = h.create(amount=5)
        tx = pay_usdc(chain, p)
        head = chain.w3.eth.get_transaction_receipt(tx)["blockNumber"]
        until(lambda: [t.status for t in h.transfers(p["id"])] == ["SEEN"], message="the transfer seen")

        def head_check_with_a_new_block(request) -> bool:  # the watcher asks its head's hash, a block is waiting
            return (
                isinstance(request, list)
                and len(request) == 1
                and request[0].get("method") == "eth_getBlockByNumber"
                and request[0].get("params") == [hex(head), False]
                and chain.block_number > head
            )

        proxy.after(head_check_with_a_new_block, lambda: chain.reorg(2))  # the head and the block above it
        chain.mine(1)
        until(proxy.after_done.is_set, message="the reorg happened right after the head check")
        chain.mine(CONFIRMATIONS + 1)
        until(
            lambda: (
                watcher.scanner.state.head == chain.block_number
                and watcher.scanner.state.head_hash == chain.w3.eth.get_block("latest")["hash"].to_0x_hex()
            ),
            message="watcher at the tip of the new branch",
        )
        assert [t.status for t in h.transfers(p["id"])] == ["ORPHANED"]
        assert h.status(p["id"]) == "PENDING" and int(h.payment(p["id"]).amount_received_units) == 0
