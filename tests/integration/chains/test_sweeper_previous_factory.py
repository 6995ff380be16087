"""Deposits created before the forwarder changed are still swept, through the factory of
their day: on anvil, the first version's factory (its committed artifact, deployed through
the deterministic deployer where ``forwarder.PREVIOUS_FACTORIES`` says) beside today's; a
payment whose deposit address is of the old factory, and one of the new, both swept, each
by a flushMany to its own factory; and the issue's gas-burning settlement contract behind an
old deposit (which passes all its gas on), held at the cost of one small sweep."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from eth_utils import keccak

from kassa_common.accounts import merchants
from kassa_common.chains import forwarder
from kassa_common.chains.evm import create2_address
from kassa_common.db import unit_of_work
from kassa_common.models import Payment, SweepHold
from kassa_common.timefmt import utcnow
from kassa_sweeper.engine import Outcome
from tests.support import settlements
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.forwarder import SWEEPER
from tests.support.sweeper import (  # noqa: F401  (factory: a fixture)
    NETWORK,
    chain_settings,
    events_of,
    factory,
    live_payment,
    paid,
    reset_sweeps,
    settling_merchant,
    sweeper_for,
    sweeps_since,
)

V1 = json.loads((Path(__file__).resolve().parents[2] / "contracts" / "legacy" / "ForwarderFactory-v1.json").read_text())
ETH = 10**16


def v1_init_code() -> bytes:
    return bytes.fromhex(V1["bytecode"][2:])


@pytest.fixture
def chain(anvil_isolated, factory, sessions):
    reset_sweeps(sessions)
    w3 = anvil_isolated.w3
    (legacy,) = forwarder.PREVIOUS_FACTORIES
    if w3.eth.get_code(legacy) == b"":
        tx = w3.eth.send_transaction(
            {
                "from": anvil_isolated.accounts[0],
                "to": forwarder.DETERMINISTIC_DEPLOYER,
                "data": "0x" + (forwarder.FACTORY_SALT + v1_init_code()).hex(),
            }
        )
        assert w3.eth.wait_for_transaction_receipt(tx)["status"] == 1
    return anvil_isolated


def test_the_previous_factory_is_where_its_committed_bytecode_lands():
    assert forwarder.PREVIOUS_FACTORIES == (
        create2_address(forwarder.DETERMINISTIC_DEPLOYER, forwarder.FACTORY_SALT, keccak(v1_init_code())),
    )
    assert forwarder.factory_address() not in forwarder.PREVIOUS_FACTORIES


def test_a_deposit_of_the_previous_factory_is_swept_through_it_beside_todays(
    settings, chain, sessions, client, make_merchant
):
    merchant = settling_merchant(make_merchant, sessions)
    old, new = [live_payment(client, merchant, 30, "ETH") for _ in range(2)]
    (legacy,) = forwarder.PREVIOUS_FACTORIES
    with unit_of_work(sessions) as s:  # as it was created before the upgrade
        row = s.get(Payment, uuid.UUID(old["id"]))
        row.address = forwarder.deposit_address(legacy, merchant.settlement, bytes.fromhex(row.deposit_salt[2:]))
        old["address"] = row.address
    paid(chain, sessions, old, ETH)
    paid(chain, sessions, new, ETH)
    sweeper, started = sweeper_for(chain_settings(settings, chain), sessions), utcnow()
    nonce = chain.w3.eth.get_transaction_count(SWEEPER.address)

    outcomes = []
    for _ in range(8):
        outcomes.append(sweeper.tick().outcome)
        chain.mine(1)

    sweeps = sweeps_since(sessions, started)
    assert [(s.status, s.deposit_count) for s in sweeps] == [("CONFIRMED", 1), ("CONFIRMED", 1)]
    assert {chain.w3.eth.get_transaction(s.tx_hash)["to"] for s in sweeps} == {legacy, forwarder.factory_address()}
    assert chain.w3.eth.get_balance(merchant.settlement) == 2 * ETH
    assert [len(events_of(sessions, p["id"], "payment.swept")) for p in (old, new)] == [1, 1]
    assert outcomes[-2:] == [Outcome.IDLE] * 2 and chain.w3.eth.get_transaction_count(SWEEPER.address) == nonce + 2


def test_a_gas_burning_settlement_behind_a_first_version_deposit_is_held_at_the_cost_of_one_small_sweep(
    settings, chain, sessions, client, make_merchant
):
    """The issue's case on the real first-version forwarder (all gas passed on): a deposit
    settling to a contract that burns what it gets, first of a batch of eight. That batch
    would need 16 million gas (the following deposits must fit in the 1/64 left); the sweeper
    takes it apart, sends the burner's deposit alone (a small gas limit: little to burn) and
    holds it, and sweeps the seven others."""
    (legacy,) = forwarder.PREVIOUS_FACTORIES
    burner = settlements.deploy(chain.w3, "GasBurner")
    hostile = make_merchant()
    with unit_of_work(sessions) as s:
        merchants.set_settlement_address(s, hostile.id, "live", burner)
    friendly = settling_merchant(make_merchant, sessions)

    def legacy_payment(merchant, settlement):
        p = live_payment(client, merchant, 30, "ETH")
        with unit_of_work(sessions) as s:
            row = s.get(Payment, uuid.UUID(p["id"]))
            row.address = p["address"] = forwarder.deposit_address(
                legacy, settlement, bytes.fromhex(row.deposit_salt[2:])
            )
        paid(chain, sessions, p, ETH)
        return p

    bad = legacy_payment(hostile, burner)
    for _ in range(7):  # deposits that go on being swept
        legacy_payment(friendly, friendly.settlement)
    sweeper, started = sweeper_for(chain_settings(settings, chain), sessions), utcnow()
    nonce = chain.w3.eth.get_transaction_count(SWEEPER.address)

    for _ in range(12):
        sweeper.tick()
        chain.mine(1)

    sweeps = sweeps_since(sessions, started)
    assert sorted(s.deposit_count for s in sweeps) == [1, 7] and all(s.status == "CONFIRMED" for s in sweeps)
    alone = next(s for s in sweeps if s.deposit_count == 1)
    assert alone.deposits[0]["payment_id"] == bad["id"] and alone.gas_limit < 250_000  # what it could burn
    assert chain.w3.eth.get_balance(friendly.settlement) == 7 * ETH
    assert chain.w3.eth.get_balance(bad["address"]) == ETH
    with sessions() as s:
        (hold,) = s.scalars(sa.select(SweepHold).where(SweepHold.payment_id == uuid.UUID(bad["id"])))
    assert hold.status == "HELD" and "0.01 ETH did not move" in hold.reason
    assert chain.w3.eth.get_transaction_count(SWEEPER.address) == nonce + 2
