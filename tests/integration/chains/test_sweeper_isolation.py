"""One deposit cannot stop the others being swept, nor drain the sweeper key (issue 18):
on anvil, with merchants whose settlement addresses are contracts (tests/contracts): one
that burns every unit of gas it gets, one that refuses the coin, a real Safe. A deposit
whose flush fails (on chain, or in gas estimation) is held with its reason; every other
deposit, in the same batch and later ones, is swept; the held one is not tried again
until the operator releases it; the key's transactions are counted."""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import partial

import pytest
import sqlalchemy as sa

from kassa_common.accounts import merchants
from kassa_common.chains import forwarder
from kassa_common.db import unit_of_work
from kassa_common.models import SweepHold, Transfer
from kassa_common.timefmt import utcnow
from kassa_sweeper.engine import Outcome
from tests.support import settlements
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
    sweeper_for,
    sweeps_since,
)

ETH = 10**16  # 0.01 ETH: $30 at the fixed rate
USDC = 10**6


@pytest.fixture
def settling_to(make_merchant, sessions, client):
    """A merchant settling to ``settlement``; returns a function creating its live payments."""

    def merchant(settlement: str):
        m = make_merchant()
        with unit_of_work(sessions) as s:
            merchants.set_settlement_address(s, m.id, "live", settlement)

        return partial(live_payment, client, m, amount=30, token="ETH")

    return merchant


def holds(sessions, pid: str) -> list[SweepHold]:
    with sessions() as s:
        return list(s.scalars(sa.select(SweepHold).where(SweepHold.payment_id == uuid.UUID(pid))))


def still_due(sessions, pid: str) -> bool:
    with sessions() as s:
        return bool(
            s.scalar(sa.select(sa.func.bool_or(Transfer.sweep_due)).where(Transfer.payment_id == uuid.UUID(pid)))
        )


def sent_by_key(chain) -> int:
    return chain.w3.eth.get_transaction_count(SWEEPER.address)


def run(sweeper, chain, ticks: int) -> list[Outcome]:
    """``ticks`` steps, a block mined after each (confirmations come, and time passes)."""
    outcomes = []
    for _ in range(ticks):
        outcomes.append(sweeper.tick().outcome)
        chain.mine(1)
    return outcomes


def test_a_settlement_contract_that_burns_gas_is_held_and_everything_else_is_swept_at_a_bounded_cost(
    env, chain, sessions, settling_to
):
    burner = settlements.deploy(chain.w3, "GasBurner")
    hostile = settling_to(burner)
    friendly_settlement = fresh_address()
    friendly = settling_to(friendly_settlement)
    bad = hostile()
    first = [friendly(), friendly(amount=10, token="USDC")]
    paid(chain, sessions, first[0], ETH)
    paid(chain, sessions, bad, ETH)  # between the others, in the same batch
    paid(chain, sessions, first[1], 10 * USDC, "USDC")
    sweeper, started, nonce = sweeper_for(env, sessions), utcnow(), sent_by_key(chain)

    outcomes = run(sweeper, chain, 3)

    (sweep,) = sweeps_since(sessions, started)
    assert Outcome.CONFIRMED in outcomes and sweep.deposit_count == 3 and sweep.status == "CONFIRMED"
    assert chain.w3.eth.get_balance(friendly_settlement) == ETH  # the others of its batch: swept
    assert [len(events_of(sessions, p["id"], "payment.swept")) for p in first] == [1, 1]
    assert chain.w3.eth.get_balance(bad["address"]) == ETH and chain.w3.eth.get_balance(burner) == 0
    (hold,) = holds(sessions, bad["id"])
    assert hold.status == "HELD" and hold.held == {"ETH": str(ETH)} and hold.sweep_id == sweep.id
    assert burner in hold.reason and "did not take 0.01 ETH" in hold.reason and "50,000 gas" in hold.reason
    assert still_due(sessions, bad["id"]) and events_of(sessions, bad["id"], "payment.swept") == []

    later = [friendly(), friendly()]  # later batches: swept, without the held deposit
    for p in later:
        paid(chain, sessions, p, ETH)
    outcomes = run(sweeper, chain, 10)

    assert [len(events_of(sessions, p["id"], "payment.swept")) for p in later] == [1, 1]
    second = sweeps_since(sessions, started)[1:]
    assert [s.deposit_count for s in second] == [2]
    assert bad["id"] not in {d["payment_id"] for s in second for d in s.deposits}
    assert outcomes[-5:] == [Outcome.IDLE] * 5  # the held deposit is not retried
    assert sent_by_key(chain) - nonce == 2  # two transactions in 13 steps, one per batch
    receipt = chain.w3.eth.get_transaction_receipt(sweep.tx_hash)
    assert receipt["gasUsed"] < 3 * 112_000 + forwarder.NATIVE_GAS  # the burner cost the stipend at most


def test_a_settlement_contract_that_refuses_the_coin_is_held_with_its_reason(env, chain, sessions, settling_to):
    refuser = settlements.deploy(chain.w3, "Refuser")
    p = settling_to(refuser)()
    paid(chain, sessions, p, ETH)
    sweeper, nonce = sweeper_for(env, sessions), sent_by_key(chain)

    outcomes = run(sweeper, chain, 8)

    assert outcomes.count(Outcome.SENT) == 1 and outcomes[-3:] == [Outcome.IDLE] * 3
    assert sent_by_key(chain) - nonce == 1
    (hold,) = holds(sessions, p["id"])
    assert hold.status == "HELD" and "did not take 0.01 ETH" in hold.reason and "receive reverted" in hold.reason
    assert chain.w3.eth.get_balance(p["address"]) == ETH


@pytest.mark.parametrize("make", [settlements.safe, settlements.smart_account], ids=["safe-1.4.1", "erc4337"])
def test_a_safe_or_smart_account_settlement_receives_the_coin_through_the_sweeper(
    env, chain, sessions, settling_to, make
):
    wallet = make(chain.w3)
    p = settling_to(wallet)()
    paid(chain, sessions, p, ETH)

    outcomes = run(sweeper_for(env, sessions), chain, 3)

    assert Outcome.CONFIRMED in outcomes and holds(sessions, p["id"]) == []
    assert chain.w3.eth.get_balance(wallet) == ETH and chain.w3.eth.get_balance(p["address"]) == 0
    assert len(events_of(sessions, p["id"], "payment.swept")) == 1


def test_a_deposit_whose_flush_fails_estimation_is_isolated_and_the_batch_goes(env, chain, sessions, settling_to):
    settlement = fresh_address()
    create = settling_to(settlement)
    payments = [create() for _ in range(5)]
    for p in payments:
        paid(chain, sessions, p, ETH)
    broken = payments[3]
    chain.rpc("anvil_setCode", broken["address"], "0xfe")  # its flush now fails, in estimation and on chain
    sweeper, started, nonce = sweeper_for(env, sessions), utcnow(), sent_by_key(chain)

    assert sweeper.tick().outcome == Outcome.HELD  # bisected by estimation: nothing sent
    assert sent_by_key(chain) == nonce
    outcomes = run(sweeper, chain, 8)

    (sweep,) = sweeps_since(sessions, started)
    assert sweep.status == "CONFIRMED" and sweep.deposit_count == 4
    assert chain.w3.eth.get_balance(settlement) == 4 * ETH
    (hold,) = holds(sessions, broken["id"])
    assert hold.status == "HELD" and hold.reason.startswith("gas estimation failed: execution reverted")
    assert hold.sweep_id is None and still_due(sessions, broken["id"])
    assert outcomes[-3:] == [Outcome.IDLE] * 3 and sent_by_key(chain) - nonce == 1


def test_a_batch_that_reverts_on_chain_goes_deposit_by_deposit_and_only_the_culprit_is_held(
    env, chain, sessions, settling_to
):
    settlement = fresh_address()
    create = settling_to(settlement)
    payments = [create() for _ in range(3)]
    for p in payments:
        paid(chain, sessions, p, ETH)
    sweeper, started, nonce = sweeper_for(env, sessions), utcnow(), sent_by_key(chain)
    chain.rpc("evm_setAutomine", False)
    assert sweeper.tick().outcome == Outcome.SENT  # estimation passed...
    chain.rpc("anvil_setCode", payments[1]["address"], "0xfe")  # ...then the chain changed
    chain.rpc("evm_setAutomine", True)
    chain.mine(1)

    assert sweeper.tick().outcome == Outcome.FAILED
    with sessions() as s:
        assert {
            h.status
            for h in s.scalars(
                sa.select(SweepHold).where(SweepHold.payment_id.in_([uuid.UUID(p["id"]) for p in payments]))
            )
        } == {"SOLO"}
    outcomes = run(sweeper, chain, 12)

    done = sweeps_since(sessions, started)
    assert [(s.status, s.deposit_count) for s in done] == [("FAILED", 3), ("CONFIRMED", 1), ("CONFIRMED", 1)]
    assert chain.w3.eth.get_balance(settlement) == 2 * ETH
    assert [len(holds(sessions, p["id"])) for p in payments] == [0, 1, 0]  # the solo ones swept are free again
    assert holds(sessions, payments[1]["id"])[0].status == "HELD"
    assert outcomes[-3:] == [Outcome.IDLE] * 3 and sent_by_key(chain) - nonce == 3


def test_a_deposit_that_reverts_on_its_own_is_held(env, chain, sessions, settling_to):
    p = settling_to(fresh_address())()
    paid(chain, sessions, p, ETH)
    sweeper, nonce = sweeper_for(env, sessions), sent_by_key(chain)
    chain.rpc("evm_setAutomine", False)
    sent = sweeper.tick()
    chain.rpc("anvil_setCode", p["address"], "0xfe")
    chain.rpc("evm_setAutomine", True)
    chain.mine(1)

    assert sweeper.tick().outcome == Outcome.FAILED
    outcomes = run(sweeper, chain, 4)

    (hold,) = holds(sessions, p["id"])
    assert hold.status == "HELD" and hold.reason.startswith(f"its sweep {sent.sweep.tx_hash} reverted on chain")
    assert outcomes == [Outcome.IDLE] * 4 and sent_by_key(chain) - nonce == 1


def test_a_held_deposit_of_a_payment_paid_again_stays_held(env, chain, sessions, settling_to):
    refuser = settlements.deploy(chain.w3, "Refuser")
    p = settling_to(refuser)()
    paid(chain, sessions, p, ETH)
    sweeper = sweeper_for(env, sessions, max_age=timedelta(0))
    run(sweeper, chain, 4)
    assert holds(sessions, p["id"])[0].status == "HELD"
    nonce = sent_by_key(chain)

    paid(chain, sessions, p, ETH)  # new funds do not release it: only the operator does
    outcomes = run(sweeper, chain, 4)

    assert outcomes == [Outcome.IDLE] * 4 and sent_by_key(chain) == nonce
    assert chain.w3.eth.get_balance(p["address"]) == 2 * ETH
