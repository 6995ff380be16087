"""The EVM chain watcher end to end: anvil with the real dev ERC-20s → watcher → RabbitMQ
→ settler → payment state, with LOCAL_EVM needing 3 confirmations."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.chains.networks import load_registry
from kassa_common.db import unit_of_work
from kassa_common.models import Payment
from kassa_dev.chain import pay
from kassa_expirer.jobs import Jobs
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.api import set_live_wallet
from tests.support.wait import until
from tests.support.watcher import at_tip, harness, units_due

CONFIRMATIONS = 3


@pytest.fixture
def evm_settings(settings, chain):
    env = {"LOCAL_EVM_RPC_URL": chain.url, "LOCAL_EVM_CONFIRMATIONS": str(CONFIRMATIONS)}
    return settings.with_(networks=load_registry(env))


@pytest.fixture
def h(evm_settings, engine, sessions, make_merchant):
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm", TEST_XPUBS["evm"])
    with harness(evm_settings, engine, sessions, merchant, "LOCAL_EVM") as h:
        yield h


@pytest.fixture
def watching(h, chain):
    """A watcher that is following the tip (its start-up backfill done)."""
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    at_tip(watcher, chain, CONFIRMATIONS)
    return watcher


def pay_token(chain, p, amount_units, symbol="USDC"):
    return pay(chain.w3, to=p["address"], amount_base_units=amount_units, token_contract=chain.tokens[symbol])


def wait_confirmations(h, pid, n):
    until(lambda: h.payment(pid).confirmations == n, message=f"{n} confirmations shown")


def test_full_usdc_payment_completes_after_exactly_the_required_confirmations(h, chain, watching):
    p = h.create()
    tx = pay_token(chain, p, units_due(p))
    wait_confirmations(h, p["id"], 1)
    assert h.events(p["id"]) == ["payment.created", "payment.detected"]
    chain.mine(CONFIRMATIONS - 2)
    wait_confirmations(h, p["id"], CONFIRMATIONS - 1)
    assert h.status(p["id"]) == "PENDING"
    chain.mine(1)
    h.wait_status(p["id"], "COMPLETED")
    paid = h.payment(p["id"])
    assert paid.transaction_hash == tx
    assert int(paid.amount_received_units) == units_due(p) and paid.confirmations == CONFIRMATIONS
    assert h.events(p["id"]) == ["payment.created", "payment.detected", "payment.completed"]


def test_partial_payment_then_top_up_completes(h, chain, watching):
    p = h.create(amount=10)
    pay_token(chain, p, 4_000_000)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "PARTIALLY_PAID")
    assert int(h.payment(p["id"]).amount_received_units) == 4_000_000
    pay_token(chain, p, 6_000_000)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")
    assert int(h.payment(p["id"]).amount_received_units) == 10_000_000
    # the top-up may be caught while unconfirmed (payment.detected) or only once confirmed
    settled = [e for e in h.events(p["id"]) if e != "payment.detected"]
    assert settled[-2:] == ["payment.partially_paid", "payment.completed"]


def test_over_payment_completes_and_shows_the_surplus(h, chain, watching):
    p = h.create(amount=5)
    pay_token(chain, p, 7_500_000)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")
    assert int(h.payment(p["id"]).amount_received_units) == 7_500_000


def test_another_token_to_the_address_is_recorded_not_counted(h, chain, watching):
    p = h.create(amount=5)
    pay_token(chain, p, 5_000_000, symbol="USDT")
    chain.mine(CONFIRMATIONS - 1)
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"], message="USDT transfer recorded")
    (transfer,) = h.transfers(p["id"])
    assert transfer.token == "USDT" and not transfer.counted
    paid = h.payment(p["id"])
    assert paid.status == "PENDING" and int(paid.amount_received_units) == 0


def test_transfer_after_expiry_is_a_late_payment(h, chain, sessions, watching):
    p = h.create(amount=5)
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment)
            .where(Payment.address == p["address"])
            .values(expires_at=sa.func.now() - sa.text("interval '1 minute'"))
        )
    until(lambda: h.settled_at() is not None, message="the settler applied a watermark")
    while Jobs(sessions, test_complete_after=timedelta(hours=1)).expire():
        pass
    assert h.status(p["id"]) == "EXPIRED"
    pay_token(chain, p, 5_000_000)
    chain.mine(CONFIRMATIONS - 1)
    until(lambda: "payment.late_payment" in h.events(p["id"]), message="late payment event")
    paid = h.payment(p["id"])
    assert paid.status == "EXPIRED" and int(paid.amount_received_units) == 5_000_000


def test_native_eth_at_the_locked_rate_completes(h, chain, watching):
    p = h.create(amount=30, token="ETH")
    assert Decimal(p["crypto_amount"]) == Decimal("0.01")  # the fixed rate ETH=3000, locked at creation
    tx = pay(chain.w3, to=p["address"], amount_base_units=units_due(p), token_contract=None)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")
    (transfer,) = h.transfers(p["id"])
    assert transfer.log_index == -1 and transfer.tx_hash == tx and h.payment(p["id"]).transaction_hash == tx


def test_transfer_removed_by_a_reorg_never_counts_and_counts_once_reincluded(h, chain, watching):
    chain.mine(2)
    p = h.create(amount=5)
    tx = pay_token(chain, p, 5_000_000)
    raw = chain.raw_transaction(tx)
    wait_confirmations(h, p["id"], 1)
    chain.reorg(1)  # the block holding the transfer is replaced by one without it
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message="transfer orphaned")
    chain.mine(CONFIRMATIONS)
    until(lambda: watching.scanner.state.head == chain.block_number, message="watcher at the tip")
    paid = h.payment(p["id"])
    assert paid.status == "PENDING" and int(paid.amount_received_units) == 0
    chain.reorg(1, [(raw, 0)])  # the same transaction comes back in a new block
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")
    assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]
    assert h.events(p["id"]).count("payment.completed") == 1


def test_a_payment_created_after_its_block_was_scanned_is_still_found(h, chain, watching):
    p = h.create(amount=5)
    # the feed brings the address on its own time: wait for it, then take it back out
    until(lambda: p["address"].lower() in watching.watchlist, message="address on the watchlist")
    watching.watchlist.take_new()  # as if the address had not reached the watcher yet
    watching.watchlist._all.discard(p["address"].lower())
    pay_token(chain, p, 5_000_000)
    until(lambda: watching.scanner.state.head == chain.block_number, message="block scanned")
    assert h.transfers(p["id"]) == []
    watching.watchlist.add(p["address"])  # arrives late (bus or reload)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")


def test_a_second_watcher_stays_idle_until_the_first_stops(h, chain, watching):
    second = h.start_watcher()
    assert not second.active.wait(1.0)
    p = h.create(amount=5)
    watching.stop()
    until(second.active.is_set, message="second watcher takes over")
    pay_token(chain, p, 5_000_000)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")


def start_process(h, chain):
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "DATABASE_URL": h.settings.database_url,
        "RABBITMQ_URL": h.settings.rabbitmq_url,
        "BUS_PREFIX": h.settings.bus_prefix,
        "LOCAL_EVM_RPC_URL": chain.url,
        "LOCAL_EVM_CONFIRMATIONS": str(CONFIRMATIONS),
        "CHAIN_WATCHER_NETWORKS": "LOCAL_EVM",
        "CHAIN_WATCHER_POLL_SECONDS": "0.05",
        "CHAIN_WATCHER_BATCH_BLOCKS": "1",
        "LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "kassa_chain_watcher.main"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def cursor(sessions):
    from kassa_common.models import ChainCursor

    with sessions() as s:
        row = s.get(ChainCursor, "LOCAL_EVM")
        return row and row.block_number


def test_a_watcher_killed_mid_scan_resumes_without_gap_or_double_count(h, chain, sessions):
    import signal

    proc = start_process(h, chain)
    try:
        until(lambda: cursor(sessions) is not None, message="watcher process active")
        payments = [h.create(amount=1 + i) for i in range(6)]
        for p in payments[:3]:
            pay_token(chain, p, units_due(p))
        chain.mine(CONFIRMATIONS - 1)
        h.wait_status(payments[0]["id"], "COMPLETED")
        for p in payments[3:5]:
            pay_token(chain, p, units_due(p))
        proc.send_signal(signal.SIGKILL)  # somewhere between scanning and confirming
        proc.wait(10)
        pay_token(chain, payments[5], units_due(payments[5]))  # while no watcher runs
        chain.mine(CONFIRMATIONS)
        proc = start_process(h, chain)
        for p in payments:
            h.wait_status(p["id"], "COMPLETED", timeout=20)
    finally:
        proc.kill()
        proc.wait(10)
    for p in payments:
        assert int(h.payment(p["id"]).amount_received_units) == units_due(p)
        assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]
        assert h.events(p["id"]).count("payment.completed") == 1
