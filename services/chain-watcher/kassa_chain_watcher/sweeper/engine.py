"""Sweeping one network, one step at a time, under that network's lock.

A step follows the sweep in flight, or plans and sends the next one:

- **plan**: the deposits due (``payments.sweeps.deposits_due``) and what each holds on chain
  now; a deposit that holds nothing was flushed already (anyone may flush one) and is
  simply done; the rest go into one ``flushMany``, each with the tokens it holds.
- **send**: the signed transaction (its raw bytes too) is written and the deposits' due
  transfers are claimed in one commit, and only then broadcast: a crash in between only
  means broadcasting the same bytes again.
- **follow**: mined, then confirmed by the network's confirmation count → what the
  ``Flushed`` events say moved is recorded on each payment (``payment.swept``) with the
  gas and its cost; unmined after ``SWEEP_REPLACE_SECONDS`` → the same nonce again with
  higher fees (whichever attempt is mined counts); reverted, or its nonce taken by another
  transaction → failed, and its transfers go to the next sweep; mined then gone in a
  reorg → pending again, and broadcast again.

One sweep is in flight per network at a time, and the step holds a transaction-level
advisory lock on the network: two sweepers, or a sweeper and ``kassa sweep``, take turns
instead of racing for the key's nonce or sweeping a deposit twice.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from requests import RequestException
from sqlalchemy.orm import Session, sessionmaker
from web3.exceptions import TransactionNotFound, Web3Exception

from kassa_common.chains.networks import Network
from kassa_common.chains.rates import RateProvider
from kassa_common.db import unit_of_work
from kassa_common.messages import SweepStatus
from kassa_common.models import Sweep
from kassa_common.payments import sweeps
from kassa_common.payments.sweeps import Deposit, SweepPolicy
from kassa_common.timefmt import utcnow
from kassa_chain_watcher.lock import lock_key
from kassa_chain_watcher.rpc import scrub
from kassa_chain_watcher.sweeper.chain import DepositChain
from kassa_chain_watcher.sweeper.txs import Fees, Signer, broadcast, market_fees

log = logging.getLogger("kassa.sweeper")
PENDING, MINED, CONFIRMED, FAILED = SweepStatus
IN_FLIGHT = (PENDING, MINED)
GAS_MARGIN = 1.25


class Outcome(StrEnum):
    BUSY = "busy"  # another sweeper holds the network
    IDLE = "idle"  # nothing in flight, nothing due
    WAITING = "waiting"  # a sweep is in flight: not mined or not confirmed yet
    SENT = "sent"
    REPLACED = "replaced"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    SKIPPED = "skipped"  # due deposits, but nothing could be sent (see the log)


@dataclass(frozen=True)
class Step:
    outcome: Outcome
    sweep: Sweep | None = None
    broadcast: str | None = None  # raw bytes to send once the step has committed

    @property
    def progressed(self) -> bool:
        return self.outcome in (Outcome.SENT, Outcome.REPLACED, Outcome.CONFIRMED, Outcome.FAILED)


@dataclass(frozen=True)
class Plan:
    deposits: list[Deposit]
    held: dict[str, dict[str, int]]  # deposit address (lower) -> symbol -> units, on chain now

    def empty(self) -> list[Deposit]:
        return [d for d in self.deposits if not any(self.held[d.address.lower()].values())]

    def full(self) -> list[Deposit]:
        return [d for d in self.deposits if any(self.held[d.address.lower()].values())]


class NetworkSweeper:
    def __init__(self, network: Network, sessions: sessionmaker[Session], chain: DepositChain, signer: Signer | None,
                 rates: RateProvider, *, policy: SweepPolicy = SweepPolicy(), batch_size: int = 50,
                 replace_after: timedelta = timedelta(minutes=3)) -> None:
        self.network, self.sessions, self.chain, self.signer, self.rates = network, sessions, chain, signer, rates
        self.policy, self.batch_size, self.replace_after = policy, batch_size, replace_after
        self.w3 = chain.w3
        self.lock_key = lock_key(network.name, "sweeper")

    # -- the step ---------------------------------------------------------------------------
    def tick(self, *, force: bool = False, merchant_id: uuid.UUID | None = None) -> Step:
        """One step; ``force`` sweeps every deposit with confirmed funds, whatever the policy."""
        if self.signer is None:
            raise ValueError("no sweeper key: SWEEPER_PRIVATE_KEY pays the sweeps' gas")
        with unit_of_work(self.sessions) as s:
            if not s.scalar(sa.select(sa.func.pg_try_advisory_xact_lock(self.lock_key))):
                return Step(Outcome.BUSY)
            sweep = s.scalars(sa.select(Sweep).where(Sweep.network == self.network.name, Sweep.status.in_(IN_FLIGHT))
                              .order_by(Sweep.nonce)).first()
            step = self._follow(s, sweep) if sweep is not None else self._start(s, force, merchant_id)
        if step.broadcast is not None:
            try:
                broadcast(self.w3, step.broadcast)
            except (Web3Exception, RequestException, ValueError) as exc:  # recorded: the next step sends it again
                log.warning("%s: broadcasting sweep %s failed (%s); it is sent again next time",
                            self.network.name, step.sweep.tx_hash, self.safe(exc))
        return step

    def plan(self, session: Session, *, force: bool = False, merchant_id: uuid.UUID | None = None) -> Plan:
        deposits = sweeps.deposits_due(session, self.network, policy=None if force else self.policy, rates=self.rates,
                                       now=utcnow(), merchant_id=merchant_id, limit=self.batch_size)
        return Plan(deposits, self.chain.balances(d.address for d in deposits) if deposits else {})

    def call_for(self, planned: list[dict[str, Any]]) -> dict[str, str]:
        """The ``flushMany`` of planned deposits (``planned`` below), each listing the tokens
        it holds; a replacement rebuilds the same call from the sweep's record."""
        return self.chain.flush_many([(d["settlement"], d["salt"], [t for t in d["held"] if t != self.chain.native])
                                      for d in planned])

    def estimate_gas(self, call: dict[str, str]) -> int:
        sender = {"from": self.signer.address} if self.signer else {}  # no key: a dry run's estimate
        return int(self.w3.eth.estimate_gas({**sender, **call}) * GAS_MARGIN) + 20_000

    # -- sending ----------------------------------------------------------------------------
    def _start(self, s: Session, force: bool, merchant_id: uuid.UUID | None) -> Step:
        plan = self.plan(s, force=force, merchant_id=merchant_id)
        if not plan.deposits:
            return Step(Outcome.IDLE)
        if empty := plan.empty():
            log.info("%s: %d deposit(s) were flushed already: %s", self.network.name, len(empty),
                     ", ".join(d.short_id for d in empty))
            sweeps.already_empty(s, self.network.name, [d.payment_id for d in empty])
        full = [planned(d, plan) for d in plan.full()]
        if not full:
            return Step(Outcome.IDLE)
        call = self.call_for(full)
        gas, fees = self.estimate_gas(call), market_fees(self.w3)
        funds = self.w3.eth.get_balance(self.signer.address)
        if funds < gas * fees.max_fee_per_gas:
            log.error("%s: the sweeper key %s holds %s wei, a sweep of %d deposit(s) may cost up to %s: fund it",
                      self.network.name, self.signer.address, funds, len(full), gas * fees.max_fee_per_gas)
            return Step(Outcome.SKIPPED)
        nonce = self.w3.eth.get_transaction_count(self.signer.address, "pending")
        tx_hash, raw = self._sign(call, nonce, gas, fees)
        now = utcnow()
        sweep = Sweep(id=uuid.uuid4(), network=self.network.name, sender=self.signer.address, nonce=nonce,
                      status=PENDING, tx_hash=tx_hash, attempts=[_attempt(tx_hash, raw, fees, now)],
                      deposits=full, deposit_count=len(full), gas_limit=gas,
                      created_at=now, updated_at=now)
        s.add(sweep)
        s.flush()
        sweeps.claim(s, sweep.id, self.network.name, [uuid.UUID(d["payment_id"]) for d in full])
        log.info("%s: sweep %s of %d deposit(s), nonce %d", self.network.name, tx_hash, len(full), nonce)
        return Step(Outcome.SENT, sweep, raw)

    def _sign(self, call: dict[str, str], nonce: int, gas: int, fees: Fees) -> tuple[str, str]:
        return self.signer.sign({**call, "value": 0, "chainId": self.w3.eth.chain_id, "nonce": nonce, "gas": gas,
                                 **fees.fields()})

    # -- following --------------------------------------------------------------------------
    def _follow(self, s: Session, sweep: Sweep) -> Step:
        used = self.w3.eth.get_transaction_count(sweep.sender, "latest")  # before the receipts: no race
        receipt = self._receipt(sweep)
        if receipt is not None:
            return self._mined(s, sweep, receipt)
        if sweep.status == MINED:  # its block left the chain: it is pending again
            log.warning("%s: sweep %s was reorganised out; sending it again", self.network.name, sweep.tx_hash)
            self._set(sweep, status=PENDING, block_number=None)
            return Step(Outcome.WAITING, sweep, sweep.attempts[-1]["raw"])
        if used > sweep.nonce:
            return self._fail(s, sweep, f"nonce {sweep.nonce} was used by another transaction")
        last = datetime.fromisoformat(sweep.attempts[-1]["sent_at"])
        if utcnow() - last >= self.replace_after:
            return self._replace(sweep)
        known = self._known(sweep.tx_hash)
        return Step(Outcome.WAITING, sweep, None if known else sweep.attempts[-1]["raw"])

    def _receipt(self, sweep: Sweep) -> dict[str, Any] | None:
        for attempt in reversed(sweep.attempts):
            try:
                return dict(self.w3.eth.get_transaction_receipt(attempt["tx_hash"]))
            except TransactionNotFound:
                continue
        return None

    def _known(self, tx_hash: str) -> bool:
        try:
            self.w3.eth.get_transaction(tx_hash)
            return True
        except TransactionNotFound:
            return False

    def _mined(self, s: Session, sweep: Sweep, receipt: dict[str, Any]) -> Step:
        tx_hash = "0x" + bytes(receipt["transactionHash"]).hex()
        if receipt["status"] != 1:
            self._set(sweep, tx_hash=tx_hash)
            return self._fail(s, sweep, f"{tx_hash} reverted")
        if (sweep.status, sweep.tx_hash, sweep.block_number) != (MINED, tx_hash, receipt["blockNumber"]):
            self._set(sweep, status=MINED, tx_hash=tx_hash, block_number=receipt["blockNumber"])
        confirmations = self.w3.eth.block_number - receipt["blockNumber"] + 1
        if confirmations < self.network.required_confirmations:
            return Step(Outcome.WAITING, sweep)
        return self._confirm(s, sweep, receipt)

    def _confirm(self, s: Session, sweep: Sweep, receipt: dict[str, Any]) -> Step:
        now = utcnow()
        moved_at = self.chain.moved(receipt)
        moved = {uuid.UUID(d["payment_id"]): moved_at.get(d["address"].lower(), {}) for d in sweep.deposits}
        paid = sweeps.record_sweep(s, sweep.id, sweep.tx_hash, moved, now=now)
        cost = int(receipt["gasUsed"]) * int(receipt["effectiveGasPrice"])
        self._set(sweep, status=CONFIRMED, gas_used=int(receipt["gasUsed"]),
                  effective_gas_price=int(receipt["effectiveGasPrice"]), cost_units=cost, cost_usd=self._usd(cost),
                  block_number=receipt["blockNumber"], confirmed_at=now, error=_left_behind(sweep.deposits, moved))
        if sweep.error:
            log.warning("%s: sweep %s left funds behind: %s", self.network.name, sweep.tx_hash, sweep.error)
        log.info("%s: sweep %s confirmed: %d payment(s) swept, gas %d, cost %s wei", self.network.name,
                 sweep.tx_hash, len(paid), sweep.gas_used, cost)
        return Step(Outcome.CONFIRMED, sweep)

    def _replace(self, sweep: Sweep) -> Step:
        last = sweep.attempts[-1]
        fees = Fees(last["max_fee_per_gas"], last["max_priority_fee_per_gas"]).replacing(market_fees(self.w3))
        tx_hash, raw = self._sign(self.call_for(sweep.deposits), sweep.nonce, sweep.gas_limit, fees)
        self._set(sweep, tx_hash=tx_hash, attempts=[*sweep.attempts, _attempt(tx_hash, raw, fees, utcnow())])
        log.warning("%s: sweep nonce %d unmined for %s; replaced by %s (max fee %d)", self.network.name, sweep.nonce,
                    self.replace_after, tx_hash, fees.max_fee_per_gas)
        return Step(Outcome.REPLACED, sweep, raw)

    def _fail(self, s: Session, sweep: Sweep, why: str) -> Step:
        released = sweeps.release(s, sweep.id)
        self._set(sweep, status=FAILED, error=why)
        log.error("%s: sweep %s failed (%s); %d transfer(s) wait for the next one", self.network.name,
                  sweep.tx_hash, why, released)
        return Step(Outcome.FAILED, sweep)

    # -- helpers ------------------------------------------------------------------------------
    def _set(self, sweep: Sweep, **values: Any) -> None:
        for column, value in values.items():
            setattr(sweep, column, value)
        sweep.updated_at = utcnow()

    def _usd(self, cost_units: int) -> Decimal | None:
        value = sweeps.usd_value(self.network, {self.chain.native: cost_units}, self.rates)
        return value.quantize(Decimal("0.01")) if value is not None else None

    def safe(self, exc: BaseException) -> str:
        """An error without the RPC URL or its parts (its path, query or user info may carry a key:
        requests' errors quote the path alone)."""
        text = str(exc)
        for url in self.network.nodes:
            text = scrub(text.replace(url, f"<{self.network.name} RPC>"), url)
        return text


def _attempt(tx_hash: str, raw: str, fees: Fees, when: datetime) -> dict:
    return {"tx_hash": tx_hash, "raw": raw, "max_fee_per_gas": fees.max_fee_per_gas,
            "max_priority_fee_per_gas": fees.max_priority_fee_per_gas, "sent_at": when.isoformat()}


def planned(d: Deposit, plan: Plan) -> dict[str, Any]:
    """A deposit as a sweep records it: whose, where, and what it held when planned."""
    return {"payment_id": str(d.payment_id), "short_id": d.short_id, "address": d.address,
            "settlement": d.settlement, "salt": d.salt,
            "held": {s: str(u) for s, u in plan.held[d.address.lower()].items() if u}}


def _left_behind(planned: list[dict[str, Any]], moved: dict[uuid.UUID, dict[str, int]]) -> str | None:
    """What a deposit held when planned but did not move (a paused token, a blacklisted
    settlement address, a settlement contract refusing the coin): kept for the operator."""
    missing = [f"{d['short_id']} {symbol}" for d in planned for symbol in d["held"]
               if symbol not in moved.get(uuid.UUID(d["payment_id"]), {})]
    return ("did not move: " + ", ".join(missing)) if missing else None
