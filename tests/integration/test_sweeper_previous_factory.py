"""Deposits created before the forwarder changed are still swept, through the factory of
their day: on anvil, the first version's factory (its committed artifact, deployed through
the deterministic deployer where ``forwarder.PREVIOUS_FACTORIES`` says) beside today's; a
payment whose deposit address is of the old factory, and one of the new, both swept, each
by a flushMany to its own factory."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from eth_utils import keccak

from kassa_common.chains import forwarder
from kassa_common.chains.evm import create2_address
from kassa_common.db import unit_of_work
from kassa_common.models import Payment
from kassa_common.timefmt import utcnow
from kassa_chain_watcher.sweeper.engine import Outcome
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.forwarder import SWEEPER, ensure_factory
from tests.support.sweeper import (NETWORK, chain_settings, events_of, paid, reset_sweeps, settling_merchant,
                                   sweeper_for, sweeps_since)
from tests.support.api import API

V1 = json.loads((Path(__file__).resolve().parents[1] / "contracts" / "legacy" / "ForwarderFactory-v1.json").read_text())
ETH = 10**16


def v1_init_code() -> bytes:
    return bytes.fromhex(V1["bytecode"][2:])


@pytest.fixture(scope="module")
def factory(anvil):  # noqa: F811
    return ensure_factory(anvil.w3)


@pytest.fixture
def chain(anvil_isolated, factory, sessions):  # noqa: F811
    reset_sweeps(sessions)
    w3 = anvil_isolated.w3
    (legacy,) = forwarder.PREVIOUS_FACTORIES
    if w3.eth.get_code(legacy) == b"":
        tx = w3.eth.send_transaction({"from": anvil_isolated.accounts[0], "to": forwarder.DETERMINISTIC_DEPLOYER,
                                      "data": "0x" + (forwarder.FACTORY_SALT + v1_init_code()).hex()})
        assert w3.eth.wait_for_transaction_receipt(tx)["status"] == 1
    return anvil_isolated


def test_the_previous_factory_is_where_its_committed_bytecode_lands():
    assert forwarder.PREVIOUS_FACTORIES == (
        create2_address(forwarder.DETERMINISTIC_DEPLOYER, forwarder.FACTORY_SALT, keccak(v1_init_code())),)
    assert forwarder.factory_address() not in forwarder.PREVIOUS_FACTORIES


def test_a_deposit_of_the_previous_factory_is_swept_through_it_beside_todays(settings, chain, sessions, client,
                                                                           make_merchant):
    merchant = settling_merchant(make_merchant, sessions)
    old, new = [client.post(f"{API}/payments", json={"amount": 30, "token": "ETH", "network": NETWORK},
                            headers=merchant.headers("live")).get_json()["data"] for _ in range(2)]
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
