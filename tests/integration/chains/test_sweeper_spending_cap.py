"""SWEEP_MAX_SPEND_USD_PER_HOUR on anvil: the sweeper key spends at most the cap per network
in any hour (its sweeps' real costs, and the most an unmined one may cost); a batch that
does not fit is cut; once the cap is reached sweeps wait, logged and visible, and go on
when the hour's sweeps age out. Each test pays gas with a fresh key of its own, so the
other tests' sweeps do not count."""

from __future__ import annotations

import logging
import secrets
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Sweep
from kassa_common.timefmt import utcnow
from kassa_dev import chain as devchain
from kassa_sweeper.engine import Outcome
from kassa_sweeper.txs import Signer, market_fees
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.sweeper import (  # noqa: F401  (chain, env, factory: fixtures)
    NETWORK,
    chain,
    env,
    factory,
    live_payment,
    paid,
    settling_merchant,
    sweeper_for,
    sweeps_since,
)

USDC = 10**6
ETH_USD = Decimal(3000)  # the fixed rate of the tests' settings


@pytest.fixture
def key(chain):
    signer = Signer("0x" + secrets.token_hex(32))
    devchain.pay(chain.w3, to=signer.address, amount_base_units=10**18, token_contract=None)
    return signer


@pytest.fixture
def deposits(client, make_merchant, sessions, chain):
    """``n`` USDC deposits paid and due."""

    def make(n: int) -> list[dict]:
        merchant = settling_merchant(make_merchant, sessions)
        out = []
        for _ in range(n):
            p = live_payment(client, merchant)
            paid(chain, sessions, p, 10 * USDC)
            out.append(p)
        return out

    return make


def usd(wei: int) -> Decimal:
    return Decimal(wei) * ETH_USD / 10**18


def one_deposit_max_cost(sweeper, chain) -> int:
    """The most a sweep of one fresh USDC deposit may cost now (gas limit times max fee)."""
    with sweeper.sessions() as s:
        plan = sweeper.plan(s, force=True)
    gas = sweeper.estimate_gas(sweeper.call_for(sweeper.planned(plan)[:1]))
    return gas * market_fees(chain.w3).max_fee_per_gas


def test_below_the_cost_of_one_sweep_nothing_is_sent_and_the_operator_is_told(
    env, chain, sessions, key, deposits, caplog
):
    deposits(2)
    sweeper = sweeper_for(env, sessions, signer=key, cap_usd=Decimal("0.0001"))
    started = utcnow()

    with caplog.at_level(logging.WARNING, logger="kassa.sweeper"):
        steps = [sweeper.tick() for _ in range(3)]

    assert [s.outcome for s in steps] == [Outcome.CAPPED] * 3
    assert "spending cap reached" in steps[0].note and "SWEEP_MAX_SPEND_USD_PER_HOUR=0.0001" in steps[0].note
    assert chain.w3.eth.get_transaction_count(key.address) == 0 and sweeps_since(sessions, started) == []
    warnings = [r.getMessage() for r in caplog.records if "spending cap reached" in r.getMessage()]
    assert len(warnings) == 1  # logged once when it starts waiting, not at every step


def test_sweeps_stop_at_the_cap_and_go_on_when_the_hour_has_passed(env, chain, sessions, key, deposits):
    payments = deposits(6)
    sweeper = sweeper_for(env, sessions, signer=key)
    cap_wei = 2 * one_deposit_max_cost(sweeper, chain)  # room for one or two sweeps of one deposit, not six
    sweeper.cap_usd = usd(cap_wei)
    started, outcomes = utcnow(), []

    for _ in range(20):
        outcomes.append(sweeper.tick().outcome)
        chain.mine(1)

    sweeps = sweeps_since(sessions, started)
    print(
        f"\ncap {cap_wei} wei: {len(sweeps)} sweep(s) of {[s.deposit_count for s in sweeps]} deposit(s), "
        f"spent {sum(int(s.cost_units) for s in sweeps)} wei; outcomes {[o.value for o in outcomes]}"
    )
    assert sweeps and all(s.status == "CONFIRMED" for s in sweeps)
    assert sum(int(s.cost_units) for s in sweeps) <= cap_wei  # what the key really spent: within the cap
    assert sum(s.deposit_count for s in sweeps) < len(payments)  # the batch was cut, the rest waits
    assert outcomes[-5:] == [Outcome.CAPPED] * 5
    nonce = chain.w3.eth.get_transaction_count(key.address)
    assert nonce == len(sweeps)

    with unit_of_work(sessions) as s:  # an hour later
        s.execute(
            sa.update(Sweep)
            .where(Sweep.sender == key.address)
            .values(created_at=Sweep.created_at - sa.text("interval '61 minutes'"))
        )
    assert sweeper.tick().outcome == Outcome.SENT
    assert chain.w3.eth.get_transaction_count(key.address, "pending") == nonce + 1


def test_an_unmined_sweep_counts_at_the_most_it_may_cost(env, chain, sessions, key, deposits):
    deposits(2)
    sweeper = sweeper_for(env, sessions, signer=key, batch_size=1)
    one = one_deposit_max_cost(sweeper, chain)
    sweeper.cap_usd = usd(one * 3 // 2)  # one unmined sweep's most, not two
    chain.rpc("evm_setAutomine", False)
    try:
        sent = sweeper.tick()
        assert sent.outcome == Outcome.SENT
        with sessions() as s:
            spending = sweeper.spending(s)
        assert spending.spent_units == sent.sweep.gas_limit * sent.sweep.attempts[0]["max_fee_per_gas"]
    finally:
        chain.rpc("evm_setAutomine", True)
