"""The sweeper's steps on anvil with the real forwarder contracts and dev tokens: what is
due under SWEEP_MIN_USD / SWEEP_MAX_AGE_HOURS, one flushMany per batch, confirmations,
payment.swept per payment, the cost recorded, a stuck transaction replaced, two sweepers
taking turns, a deposit someone else flushed, a sweep whose nonce was taken, late funds."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from functools import partial

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import SweepItem, Transfer
from kassa_common.timefmt import utcnow
from kassa_dev import chain as devchain
from kassa_sweeper.engine import Outcome
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.forwarder import SWEEPER, fresh_address
from tests.support.sweeper import (  # noqa: F401  (chain, env, factory: fixtures)
    NETWORK,
    chain,
    env,
    events_of,
    factory,
    live_payment,
    paid,
    payment_row,
    settling_merchant,
    sweeper_for,
    sweeps_since,
)

USDC = 10**6


@pytest.fixture
def merchant(make_merchant, sessions):
    return settling_merchant(make_merchant, sessions)


@pytest.fixture
def create(client, merchant):
    return partial(live_payment, client, merchant)


def balance(chain, address, symbol) -> int:
    if symbol == "ETH":
        return chain.w3.eth.get_balance(address)
    return devchain.token_balance(chain.w3, chain.tokens[symbol], address)


def run_until(sweeper, outcome, chain=None, limit=20):
    """Step until ``outcome`` (mining a block between steps when given a chain)."""
    seen = []
    for _ in range(limit):
        step = sweeper.tick()
        seen.append(step.outcome)
        if step.outcome == outcome:
            return step
        if chain is not None:
            chain.mine(1)
    raise AssertionError(f"never reached {outcome}: {seen}")


def test_a_deposit_below_the_minimum_waits_and_one_at_the_minimum_is_swept(env, chain, sessions, create, merchant):
    small, enough = create(amount=5), create(amount=10)
    paid(chain, sessions, small, 5 * USDC)
    paid(chain, sessions, enough, 10 * USDC)
    sweeper = sweeper_for(env, sessions, min_usd="10")

    step = run_until(sweeper, Outcome.CONFIRMED, chain)

    assert [d["payment_id"] for d in step.sweep.deposits] == [enough["id"]]
    assert balance(chain, merchant.settlement, "USDC") == 10 * USDC
    assert balance(chain, small["address"], "USDC") == 5 * USDC
    assert sweeper.tick().outcome == Outcome.IDLE


def test_old_enough_funds_are_swept_whatever_their_value(env, chain, sessions, create, merchant):
    p = create(amount=1)
    paid(chain, sessions, p, USDC)
    assert sweeper_for(env, sessions, min_usd="10").tick().outcome == Outcome.IDLE
    run_until(sweeper_for(env, sessions, min_usd="10", max_age=timedelta(0)), Outcome.CONFIRMED, chain)
    assert balance(chain, merchant.settlement, "USDC") == USDC


def test_one_flush_many_moves_every_due_deposit_and_each_payment_gets_payment_swept(
    env, chain, sessions, create, merchant
):
    usdc, eth, stray = create(amount=12), create(amount=30, token="ETH"), create(amount=10)
    paid(chain, sessions, usdc, 12 * USDC)
    paid(chain, sessions, eth, 10**16)  # 0.01 ETH at the fixed 3000
    paid(chain, sessions, stray, 10 * USDC)
    paid(chain, sessions, stray, 3 * USDC, "USDT")  # another token: recorded, not counted, swept too
    started = utcnow()

    sent = sweeper_for(env, sessions).tick()
    assert sent.outcome == Outcome.SENT and sent.sweep.deposit_count == 3
    assert sweeper_for(env, sessions).tick().outcome == Outcome.WAITING  # mined: 1 of 2 confirmations
    assert events_of(sessions, usdc["id"], "payment.swept") == []
    chain.mine(1)
    done = sweeper_for(env, sessions).tick()

    assert done.outcome == Outcome.CONFIRMED and len(sweeps_since(sessions, started)) == 1
    assert {s: balance(chain, merchant.settlement, s) for s in ("USDC", "USDT", "ETH")} == {
        "USDC": 22 * USDC,
        "USDT": 3 * USDC,
        "ETH": 10**16,
    }
    for p in (usdc, eth, stray):
        assert {s: balance(chain, p["address"], s) for s in ("USDC", "USDT", "ETH")} == {"USDC": 0, "USDT": 0, "ETH": 0}
        (event,) = events_of(sessions, p["id"], "payment.swept")
        data = event.payload["data"]
        assert data["sweep_transaction_hash"] == done.sweep.tx_hash and data["swept_at"] is not None
        assert data["settlement_address"] == merchant.settlement and data["status"] == "COMPLETED"
    with sessions() as s:
        items = {
            (str(i.payment_id), i.token): int(i.amount_units)
            for i in s.scalars(sa.select(SweepItem).where(SweepItem.sweep_id == done.sweep.id))
        }
    assert items == {
        (usdc["id"], "USDC"): 12 * USDC,
        (eth["id"], "ETH"): 10**16,
        (stray["id"], "USDC"): 10 * USDC,
        (stray["id"], "USDT"): 3 * USDC,
    }
    receipt = chain.w3.eth.get_transaction_receipt(done.sweep.tx_hash)
    assert done.sweep.gas_used == receipt["gasUsed"] > 0
    assert done.sweep.cost_units == receipt["gasUsed"] * receipt["effectiveGasPrice"] and done.sweep.cost_usd > 0
    assert done.sweep.sender == SWEEPER.address and done.sweep.error is None


def test_a_stuck_sweep_is_replaced_with_higher_fees_and_the_replacement_counts(env, chain, sessions, create, merchant):
    p = create(amount=10)
    paid(chain, sessions, p, 10 * USDC)
    chain.rpc("evm_setAutomine", False)
    sweeper = sweeper_for(env, sessions, replace_after=timedelta(0))

    sent = sweeper.tick()
    replaced = sweeper.tick()

    assert (sent.outcome, replaced.outcome) == (Outcome.SENT, Outcome.REPLACED)
    first, second = replaced.sweep.attempts
    assert second["max_fee_per_gas"] > first["max_fee_per_gas"]
    assert second["max_priority_fee_per_gas"] > first["max_priority_fee_per_gas"]
    chain.mine(1)
    sweeper.replace_after = timedelta(hours=1)
    done = run_until(sweeper, Outcome.CONFIRMED, chain)
    assert done.sweep.tx_hash == second["tx_hash"] and done.sweep.nonce == sent.sweep.nonce
    assert balance(chain, merchant.settlement, "USDC") == 10 * USDC
    assert len(events_of(sessions, p["id"], "payment.swept")) == 1


def test_two_sweepers_at_once_sweep_each_deposit_once(env, chain, sessions, create, merchant):
    payments = [create(amount=10) for _ in range(3)]
    for p in payments:
        paid(chain, sessions, p, 10 * USDC)
    started, outcomes, stop = utcnow(), [], threading.Event()

    def work():
        sweeper = sweeper_for(env, sessions)
        while not stop.is_set():
            outcomes.append(sweeper.tick().outcome)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(40):
            chain.mine(1)
            if all(events_of(sessions, p["id"], "payment.swept") for p in payments):
                break
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert [len(events_of(sessions, p["id"], "payment.swept")) for p in payments] == [1, 1, 1]
    assert [s.status for s in sweeps_since(sessions, started)] == ["CONFIRMED"]
    assert Outcome.BUSY in outcomes or outcomes.count(Outcome.SENT) == 1
    assert balance(chain, merchant.settlement, "USDC") == 30 * USDC


def test_a_deposit_someone_else_flushed_is_done_without_a_sweep(env, chain, sessions, create, merchant, factory):
    p = create(amount=10)
    paid(chain, sessions, p, 10 * USDC)
    salt = bytes.fromhex(payment_row(sessions, p["id"]).deposit_salt[2:])
    factory.functions.flush(merchant.settlement, salt, [chain.tokens["USDC"]]).transact({"from": chain.accounts[5]})
    started = utcnow()

    assert sweeper_for(env, sessions).tick().outcome == Outcome.IDLE

    assert sweeps_since(sessions, started) == [] and events_of(sessions, p["id"], "payment.swept") == []
    with sessions() as s:
        assert not s.scalar(
            sa.select(sa.func.bool_or(Transfer.sweep_due)).where(Transfer.payment_id == uuid.UUID(p["id"]))
        )


def test_a_sweep_whose_nonce_another_transaction_took_fails_and_its_deposits_go_to_the_next(
    env, chain, sessions, create, merchant
):
    p = create(amount=10)
    paid(chain, sessions, p, 10 * USDC)
    chain.rpc("evm_setAutomine", False)
    sweeper = sweeper_for(env, sessions)
    sent = sweeper.tick()
    chain.rpc("anvil_dropTransaction", sent.sweep.tx_hash)
    chain.rpc("evm_setAutomine", True)
    other = SWEEPER.sign(
        {
            "to": fresh_address(),
            "value": 1,
            "gas": 21_000,
            "nonce": sent.sweep.nonce,
            "chainId": chain.w3.eth.chain_id,
            "maxFeePerGas": 10**11,
            "maxPriorityFeePerGas": 10**9,
        }
    )
    chain.w3.eth.send_raw_transaction(other[1])

    assert sweeper.tick().outcome == Outcome.FAILED
    done = run_until(sweeper, Outcome.CONFIRMED, chain)
    assert done.sweep.id != sent.sweep.id and done.sweep.nonce == sent.sweep.nonce + 1
    assert balance(chain, merchant.settlement, "USDC") == 10 * USDC


def test_funds_arriving_after_a_sweep_are_swept_again(env, chain, sessions, create, merchant):
    p = create(amount=10)
    paid(chain, sessions, p, 10 * USDC)
    sweeper = sweeper_for(env, sessions, max_age=timedelta(0))
    first = run_until(sweeper, Outcome.CONFIRMED, chain)
    paid(chain, sessions, p, 2 * USDC)  # more after completion: counted as over-payment, swept again

    second = run_until(sweeper, Outcome.CONFIRMED, chain)

    assert first.sweep.tx_hash != second.sweep.tx_hash
    assert balance(chain, merchant.settlement, "USDC") == 12 * USDC
    assert [e.payload["data"]["sweep_transaction_hash"] for e in events_of(sessions, p["id"], "payment.swept")] == [
        first.sweep.tx_hash,
        second.sweep.tx_hash,
    ]


def test_an_xpub_payment_is_never_due(env, chain, sessions, client, make_merchant):
    from tests.support.api import set_live_wallet

    m = make_merchant()
    set_live_wallet(sessions, m.id)
    p = live_payment(client, m)
    paid(chain, sessions, p, 10 * USDC)
    assert sweeper_for(env, sessions, max_age=timedelta(0)).tick().outcome == Outcome.IDLE


def test_the_dashboard_shows_where_the_funds_went(env, chain, sessions, create, merchant, app):
    from kassa_common.accounts import merchants, stores
    from tests.support.dashboard import csrf_of, log_in

    p = create(amount=10)
    paid(chain, sessions, p, 10 * USDC)
    paid(chain, sessions, p, 5 * USDC // 2, "USDT")
    done = run_until(sweeper_for(env, sessions), Outcome.CONFIRMED, chain)
    with unit_of_work(sessions) as s:
        stores.account_by_email(s, merchant.email).password_hash = merchants.hash_password("s3cret-pass")
    dash = app.test_client()
    log_in(dash, merchant.email)
    token = csrf_of(dash.get("/dashboard/keys"))
    assert dash.post("/dashboard/mode", data={"csrf_token": token, "mode": "live"}).status_code in (302, 303)

    detail = dash.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)
    listing = dash.get("/dashboard/sweeps").get_data(as_text=True)

    assert merchant.settlement in detail and done.sweep.tx_hash in detail
    assert "10 USDC" in detail and "2.5 USDT" in detail  # in the tokens' own units
    assert done.sweep.tx_hash in listing and p["short_id"] in listing and "2.5 USDT" in listing
