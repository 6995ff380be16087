"""The EVM watcher under lag, late addresses and reorgs that move a transaction: anvil with
the real dev ERC-20s → watcher → RabbitMQ → settler, LOCAL_EVM needing 3 confirmations."""

from __future__ import annotations

from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.wait import until
from tests.support.watcher import at_tip as tip_reached
from tests.support.watcher import live_evm_fixture, pay_usdc, units_due

CONFIRMATIONS = 3
KEPT = CONFIRMATIONS + 24  # the blocks the watcher keeps for reorg tracking (main.keep_blocks)


h = live_evm_fixture(CONFIRMATIONS)


def at_tip(watcher, chain):
    tip_reached(watcher, chain, CONFIRMATIONS)


def test_a_watcher_stopped_while_300_blocks_pass_reports_every_transfer_on_restart(h, chain):
    first = h.start_watcher()
    until(first.active.is_set, message="watcher active")
    payments = [h.create(amount=2 + i) for i in range(3)]
    at_tip(first, chain)
    first.stop()
    until(lambda: not first.active.is_set(), message="watcher stopped")
    pay_usdc(chain, payments[0], units_due(payments[0]))
    chain.mine(150)
    pay_usdc(chain, payments[1], units_due(payments[1]))
    chain.mine(150)
    pay_usdc(chain, payments[2], units_due(payments[2]))  # near the tip: seen, then confirmed
    chain.mine(CONFIRMATIONS - 1)
    second = h.start_watcher()
    for p in payments:
        h.wait_status(p["id"], "COMPLETED", timeout=30)
        assert int(h.payment(p["id"]).amount_received_units) == units_due(p)
        assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]
    at_tip(second, chain)
    assert second.scanner.state.confirmed_through == chain.block_number - CONFIRMATIONS + 1


def test_a_payment_whose_address_reaches_the_watcher_after_its_transfer_confirmed_is_backfilled(h, chain):
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    at_tip(watcher, chain)
    p = h.create(amount=5)
    watcher.watchlist.take_new()  # as if the address had not reached the watcher (bus lost, reload not due)
    watcher.watchlist._all.discard(p["address"].lower())
    tx = pay_usdc(chain, p, 5_000_000)
    chain.mine(KEPT + 10)  # the transfer's block is confirmed and out of the blocks the watcher keeps
    at_tip(watcher, chain)
    assert watcher.scanner.state.confirmed_through > chain.w3.eth.get_transaction_receipt(tx)["blockNumber"]
    assert h.transfers(p["id"]) == []
    watcher.watchlist.add(p["address"])  # arrives late (bus or reload)
    h.wait_status(p["id"], "COMPLETED")
    (transfer,) = h.transfers(p["id"])
    assert transfer.tx_hash == tx and transfer.status == "CONFIRMED"


def test_a_payment_the_killed_watcher_had_not_heard_of_is_found_by_the_next_one(h, chain):
    """The first watcher scans the block paying a payment whose address it never got (the
    bus lost it, the reload was not due) and is killed; the next one loads the address at
    start, and must look back for it rather than take the stored blocks as complete."""
    first = h.start_watcher()
    until(first.active.is_set, message="watcher active")
    at_tip(first, chain)
    p = h.create(amount=5)
    address = p["address"].lower()
    until(lambda: address in first.watchlist, message="the address fed to the first watcher")
    first.watchlist.replace([a for a in first.watchlist._all if a != address])  # as if it never arrived
    first.watchlist.take_new()
    tx = pay_usdc(chain, p, 5_000_000)
    chain.mine(KEPT + 10)  # the transfer's block is read, confirmed and pruned without the address
    at_tip(first, chain)
    first.stop()
    until(lambda: not first.active.is_set(), message="first watcher stopped")
    first.watchlist.replace([], initial=True)  # a new process starts with an empty watchlist
    second = h.start_watcher()
    h.wait_status(p["id"], "COMPLETED")
    (transfer,) = h.transfers(p["id"])
    assert transfer.tx_hash == tx and transfer.status == "CONFIRMED"
    at_tip(second, chain)


def test_a_reorg_replaying_a_confirmed_transfer_at_another_log_position_counts_it_once(h, chain):
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    chain.mine(2)
    p = h.create(amount=10)
    snapshot = chain.snapshot()
    tx = pay_usdc(chain, p, 5_000_000)  # half the money, alone in its block: log index 0
    raw = chain.raw_transaction(tx)
    replayed_tx = chain.w3.eth.get_transaction(tx)
    tip = replayed_tx.get("maxPriorityFeePerGas", replayed_tx["gasPrice"])
    chain.mine(CONFIRMATIONS + 1)
    h.wait_status(p["id"], "PARTIALLY_PAID")
    at_tip(watcher, chain)
    chain.revert(snapshot)  # a deep reorg: the confirmed blocks are replaced ...
    chain.rpc("evm_setAutomine", False)
    try:
        other = chain.w3.eth.send_transaction(
            {  # ... by blocks where another transfer comes first
                "from": chain.accounts[1],
                "to": chain.tokens["USDT"],
                "data": transfer_call(chain.accounts[2], 1_000_000),
                # a higher tip than the replayed transaction's: the node orders it first
                "maxPriorityFeePerGas": tip + 10**9,
                "maxFeePerGas": replayed_tx.get("maxFeePerGas", tip) + 10**10,
            }
        )
        replayed = chain.rpc("eth_sendRawTransaction", raw)
        chain.mine(1)
    finally:
        chain.rpc("evm_setAutomine", True)
    receipt = chain.w3.eth.get_transaction_receipt(replayed)
    assert replayed == tx and receipt["logs"][0]["logIndex"] == 1
    assert chain.w3.eth.get_transaction_receipt(other)["blockNumber"] == receipt["blockNumber"]
    chain.mine(CONFIRMATIONS + 3)
    at_tip(watcher, chain)
    moved_to = receipt["blockHash"].to_0x_hex()
    until(
        lambda: any(t.block_hash == moved_to for t in h.transfers(p["id"])),
        timeout=10,
        message="the transfer reported in its new block",
    )
    paid = h.payment(p["id"])
    assert paid.status == "PARTIALLY_PAID" and int(paid.amount_received_units) == 5_000_000
    assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]
    assert "payment.completed" not in h.events(p["id"])


def transfer_call(to: str, amount: int) -> str:
    return "0xa9059cbb" + to[2:].lower().rjust(64, "0") + hex(amount)[2:].rjust(64, "0")


def expire_all(sessions):
    from datetime import timedelta

    from kassa_expirer.jobs import Jobs

    jobs = Jobs(sessions, test_complete_after=timedelta(hours=1))
    while jobs.expire():
        pass


def test_a_payment_paid_on_time_while_its_watcher_is_down_does_not_expire(h, chain, sessions):
    import sqlalchemy as sa

    from kassa_common.db import unit_of_work
    from kassa_common.models import Payment

    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    p = h.create(amount=5)
    at_tip(watcher, chain)
    watcher.stop()
    until(lambda: not watcher.active.is_set(), message="watcher stopped")
    pay_usdc(chain, p, 5_000_000)  # paid on time, while no watcher runs
    chain.mine(CONFIRMATIONS)
    with unit_of_work(sessions) as s:  # then the payment's time is up
        s.execute(sa.update(Payment).where(Payment.address == p["address"]).values(expires_at=sa.func.now()))
    expire_all(sessions)
    assert h.status(p["id"]) == "PENDING"  # the watcher has not looked past the expiry yet
    h.start_watcher()
    h.wait_status(p["id"], "COMPLETED", timeout=20)
    assert "payment.expired" not in h.events(p["id"]) and "payment.late_payment" not in h.events(p["id"])


def test_once_everything_reported_past_the_expiry_is_settled_an_unpaid_payment_expires(h, chain, sessions):
    import sqlalchemy as sa

    from kassa_common.db import unit_of_work
    from kassa_common.models import Payment

    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    p = h.create(amount=5)
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Payment).where(Payment.address == p["address"]).values(expires_at=sa.func.now()))
    with sessions() as s:
        expiry = s.scalar(sa.select(Payment.expires_at).where(Payment.address == p["address"]))

    until(lambda: (h.settled_at() or expiry) > expiry, message="the settled line past the expiry")
    expire_all(sessions)
    assert h.status(p["id"]) == "EXPIRED"


def test_a_payment_paid_on_time_while_the_settler_is_down_completes_and_never_expires(h, chain, sessions):
    """The transfer is confirmed on chain and reported before ``expires_at``, but the settler
    is stopped across it while the expirer runs: the report waits in the queue, and so does
    the settled line; once the settler is back the payment completes."""
    import threading

    import sqlalchemy as sa

    from kassa_common.db import unit_of_work
    from kassa_common.models import ChainCursor, Payment

    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    p = h.create(amount=5)
    at_tip(watcher, chain)
    h.stop_settler()
    pay_usdc(chain, p, 5_000_000)  # paid on time ...
    chain.mine(CONFIRMATIONS)
    at_tip(watcher, chain)  # ... and reported confirmed, while no settler runs
    with unit_of_work(sessions) as s:  # then the payment's time is up
        s.execute(sa.update(Payment).where(Payment.address == p["address"]).values(expires_at=sa.func.now()))
        expiry = s.scalar(sa.select(Payment.expires_at).where(Payment.address == p["address"]))

    stop = threading.Event()

    def run_expirer() -> None:
        while not stop.wait(0.05):
            expire_all(sessions)

    expirer = threading.Thread(target=run_expirer, daemon=True)
    expirer.start()  # the expirer runs the whole time
    try:

        def scanned_past():
            with sessions() as s:
                at = s.scalar(sa.select(ChainCursor.scanned_at).where(ChainCursor.network == "LOCAL_EVM"))
            return at is not None and at > expiry

        until(scanned_past, message="the watcher scanned past the expiry")
        chain.mine(1)
        at_tip(watcher, chain)  # and went on reading blocks, while the expirer ran
        assert h.status(p["id"]) == "PENDING"
        assert h.settled_at() is None or h.settled_at() < expiry

        h.start_settler()
        h.wait_status(p["id"], "COMPLETED", timeout=20)
        until(lambda: (h.settled_at() or expiry) > expiry, message="the settled line past the expiry")
    finally:
        stop.set()
        expirer.join(10)
    assert h.status(p["id"]) == "COMPLETED"
    assert "payment.expired" not in h.events(p["id"]) and "payment.late_payment" not in h.events(p["id"])
