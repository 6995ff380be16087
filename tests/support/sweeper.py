"""Sweeping in tests: merchants that settle to one address and their live payments,
transfers paid on anvil and settled straight through ``payments.settle`` (the settler's own
code, without a watcher), sweepers on the test chain, and a clean slate of sweeps for each
test.

The fixtures ``factory``, ``chain`` and ``env`` are imported by the sweeper's test modules
(beside ``tests.support.anvil``'s ``anvil`` and ``anvil_isolated``, which they use)."""

from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.accounts import merchants
from kassa_common.chains.networks import load_registry
from kassa_common.db import unit_of_work
from kassa_common.messaging.messages import TransferReport
from kassa_common.messaging.publisher import Publisher
from kassa_common.messaging.relay import run_relay
from kassa_common.models import Event, Payment, Sweep, Transfer
from kassa_common.payments import settle
from kassa_common.pricing.fixed import FixedRates, parse_fixed_rates
from kassa_common.statuses import SweepStatus, TransferStatus
from kassa_common.sweeps import SweepPolicy
from kassa_dev import chain as devchain
from kassa_sweeper.chain import DepositChain, web3_for
from kassa_sweeper.engine import NetworkSweeper
from kassa_webhook_sender.webhooks.main import build as build_sender
from tests.support.api import API
from tests.support.forwarder import SWEEPER, ensure_factory, fresh_address
from tests.support.wait import until
from tests.support.watcher import harness

NETWORK = "LOCAL_EVM"


@pytest.fixture(scope="module")
def factory(anvil):
    """The forwarder factory, deployed once per module's anvil (before any snapshot)."""
    return ensure_factory(anvil.w3)


@pytest.fixture
def chain(anvil_isolated, factory, sessions):
    """anvil with the factory, reverted after the test, and a clean slate of sweeps; blocks
    mined on every transaction again afterwards (a test may mine by hand)."""
    reset_sweeps(sessions)
    yield anvil_isolated
    anvil_isolated.rpc("evm_setAutomine", True)


@pytest.fixture
def env(settings, chain):
    """The settings with LOCAL_EVM on the test chain (2 confirmations)."""
    return chain_settings(settings, chain)


def chain_settings(settings, chain, confirmations: int = 2):
    return settings.with_(
        networks=load_registry({"LOCAL_EVM_RPC_URL": chain.url, "LOCAL_EVM_CONFIRMATIONS": str(confirmations)})
    )


def reset_sweeps(sessions) -> None:
    """Each test sweeps its own chain from a clean slate: nothing in flight, nothing due."""
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Sweep)
            .where(Sweep.network == NETWORK, Sweep.status.in_(["PENDING", "MINED"]))
            .values(status=SweepStatus.FAILED, error="test reset")
        )
        s.execute(sa.update(Transfer).where(Transfer.network == NETWORK, Transfer.sweep_due).values(sweep_due=False))


def settling_merchant(make_merchant, sessions):
    """A merchant whose live EVM payments settle to a fresh address (``.settlement``)."""
    merchant = make_merchant()
    merchant.settlement = fresh_address()
    with unit_of_work(sessions) as s:
        merchants.set_settlement_address(s, merchant.id, "live", merchant.settlement)
    return merchant


def live_payment(client, merchant, amount=10, token="USDC") -> dict:
    """A live LOCAL_EVM payment of ``merchant``'s, created through the API."""
    r = client.post(
        f"{API}/payments",
        json={"amount": amount, "token": token, "network": NETWORK},
        headers=merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


# The tests of one run share a database and the sweeper key: without a cap of their own
# their sweeps would add up to the default spending cap. The cap's tests use a key of their own.
NO_CAP = Decimal(10**9)


def sweeper_for(
    settings,
    sessions,
    *,
    min_usd="10",
    max_age=timedelta(hours=24),
    signer=SWEEPER,
    replace_after=timedelta(minutes=3),
    batch_size=50,
    cap_usd=NO_CAP,
) -> NetworkSweeper:
    network = settings.networks.get(NETWORK)
    return NetworkSweeper(
        network,
        sessions,
        DepositChain(network, web3_for(network)),
        signer,
        FixedRates(parse_fixed_rates(settings.rates.fixed_rates)),
        policy=SweepPolicy(Decimal(min_usd), max_age),
        batch_size=batch_size,
        replace_after=replace_after,
        cap_usd=cap_usd,
    )


def pay(chain, payment: dict, amount: int, symbol: str | None = None) -> TransferReport:
    """Pay ``amount`` base units of ``symbol`` (default: the payment's token) to the payment's
    address on anvil; returns the confirmed report the watcher would send."""
    symbol = symbol or payment["token"]
    contract = chain.tokens.get(symbol)
    tx = devchain.pay(chain.w3, to=payment["address"], amount_base_units=amount, token_contract=contract)
    receipt = chain.w3.eth.get_transaction_receipt(tx)
    log_index = receipt["logs"][0]["logIndex"] if contract else -1
    return TransferReport(
        TransferStatus.CONFIRMED,
        NETWORK,
        tx,
        log_index,
        symbol,
        payment["address"].lower(),
        amount,
        receipt["blockNumber"],
        "0x" + bytes(receipt["blockHash"]).hex(),
        confirmations=2,
    )


def settle_report(sessions, report: TransferReport) -> None:
    with unit_of_work(sessions) as s:
        settle(s, report)


def paid(chain, sessions, payment: dict, amount: int, symbol: str | None = None) -> TransferReport:
    report = pay(chain, payment, amount, symbol)
    settle_report(sessions, report)
    return report


def payment_row(sessions, pid: str) -> Payment:
    with sessions() as s:
        return s.get(Payment, uuid.UUID(pid))


def events_of(sessions, pid: str, event_type: str | None = None) -> list[Event]:
    with sessions() as s:
        stmt = sa.select(Event).where(Event.payment_id == uuid.UUID(pid)).order_by(Event.created_at)
        return [e for e in s.scalars(stmt) if event_type is None or e.type == event_type]


def sweeps_since(sessions, since) -> list[Sweep]:
    with sessions() as s:
        return list(
            s.scalars(
                sa.select(Sweep).where(Sweep.network == NETWORK, Sweep.created_at >= since).order_by(Sweep.created_at)
            )
        )


@contextmanager
def live_pipeline(settings, engine, sessions, merchant, *, also: tuple[str, ...] = ()):
    """Everything between the chain and the merchant's webhook receiver, on a private bus:
    the EVM watcher and the settler (``watcher.harness``), the outbox relay and the webhook
    sender, in threads of this process. ``also``: other networks to watch as well."""
    with harness(settings, engine, sessions, merchant, NETWORK, also=also) as h:
        stop = threading.Event()
        publisher = Publisher(h.settings.rabbitmq_url, h.topo.exchange, declare=h.topo.declare)
        relay = threading.Thread(target=run_relay, args=(sessions, publisher, stop), daemon=True)
        relay.start()
        sender = build_sender(h.settings, engine=engine).start()
        try:
            for watcher in [h.start_watcher()] + [h.start_watcher(network=name) for name in also]:
                until(watcher.active.is_set, message=f"{watcher.network.name} watcher active")
            yield h
        finally:
            stop.set()
            relay.join(10)
            sender.stop()
