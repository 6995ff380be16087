"""Sending the next sweep of a network: which deposits go together, which are taken out of
the batch (``isolation``), whether the key may spend that much this hour (``budget``),
then the signed transaction recorded with its deposits claimed, before it is broadcast.

- a solo deposit (``sweeps.holds``) goes alone; the others go together, oldest first;
- a batch whose estimation fails (or finds more than ``GAS_PER_DEPOSIT`` a deposit) is
  bisected; the deposits that fail alone are held and the step ends (``HELD``: the next
  one, at once, sends the rest); if no deposit fails alone, a half is sent;
- a batch whose most expensive outcome (gas limit times max fee) would take the key past
  ``SWEEP_MAX_SPEND_USD_PER_HOUR`` is halved until it fits; one deposit that does not fit
  waits (``CAPPED``);
- a key that cannot pay the gas sends nothing (``SKIPPED``), as a factory not deployed.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from requests import RequestException
from sqlalchemy.orm import Session
from web3.exceptions import Web3Exception

from kassa_common import sweeps
from kassa_common.pricing.amounts import units_text
from kassa_common.sweeps import holds, records
from kassa_common.timefmt import utcnow
from kassa_sweeper import metrics
from kassa_sweeper.budget import Spending
from kassa_sweeper.isolation import call_failure, culprits
from kassa_sweeper.steps import Outcome, Step, attempt
from kassa_sweeper.txs import Fees, market_fees

if TYPE_CHECKING:
    from web3 import Web3

    from kassa_common.chains.networks import Network
    from kassa_common.sweeps import Deposit
    from kassa_sweeper.chain import DepositChain
    from kassa_sweeper.steps import Plan
    from kassa_sweeper.txs import Signer

log = logging.getLogger("kassa.sweeper")
# The most gas (with the sweeper's margin) a sweep may need per deposit: a first sweep of a
# deposit holding three tokens and the native coin needs about a third of it.
GAS_PER_DEPOSIT = 500_000


class Sending:
    """The sending half of ``engine.NetworkSweeper`` (which provides ``plan``, ``call_for``,
    ``estimate_gas``, ``spending``, ``network``, ``chain``, ``w3``, ``signer``)."""

    capped_note: str | None = None

    if TYPE_CHECKING:  # provided by engine.NetworkSweeper
        network: Network
        chain: DepositChain
        w3: Web3
        signer: Signer | None

        def plan(
            self,
            session: Session,
            *,
            force: bool = False,
            merchant_id: uuid.UUID | None = None,
            only: list[uuid.UUID] | None = None,
        ) -> Plan: ...
        def call_for(self, planned: list[dict[str, Any]]) -> dict[str, str]: ...
        def planned(self, plan: Plan, deposits: list[Deposit] | None = None) -> list[dict[str, Any]]: ...
        def estimate_gas(self, call: dict[str, str]) -> int: ...
        def spending(self, session: Session) -> Spending: ...
        def safe_text(self, text: str) -> str: ...

    @property
    def _key(self) -> Signer:
        """The sweeper key: a sweeper that sends has one (without it, none runs)."""
        assert self.signer is not None
        return self.signer

    def _start(self, s: Session, force: bool, merchant_id: uuid.UUID | None, only: list[uuid.UUID] | None) -> Step:
        plan = self.plan(s, force=force, merchant_id=merchant_id, only=only)
        if not plan.deposits:
            return Step(Outcome.IDLE)
        if empty := plan.empty():
            log.info(
                "%s: %d deposit(s) were flushed already: %s",
                self.network.name,
                len(empty),
                ", ".join(d.short_id for d in empty),
            )
            sweeps.already_empty(s, self.network.name, [d.payment_id for d in empty])
            holds.clear(s, self.network.name, [d.payment_id for d in empty if d.solo])
        full = self.planned(plan)
        if not full:
            return Step(Outcome.IDLE)
        if strays := [d for d in full if d["factory"] == "unknown"]:
            return self._hold(
                s,
                [
                    (
                        d,
                        (
                            "its address is not a deposit of this network's forwarder factory, nor of an "
                            "earlier one: it cannot be flushed by the sweeper"
                        ),
                    )
                    for d in strays
                ],
            )
        first = full[0]
        batch = [first] if first["solo"] else [d for d in full if not d["solo"] and d["factory"] == first["factory"]]
        factory = first["factory"] or self.chain.factory.address
        if not self.chain.factory_deployed(factory):
            note = f"the forwarder factory {factory} is not deployed on {self.network.name}" + (
                f": kassa contracts deploy --network {self.network.name}" if not first["factory"] else ""
            )
            log.error("%s: %s", self.network.name, note)
            return Step(Outcome.SKIPPED, note=note)
        return self._send(s, batch)

    def _send(self, s: Session, batch: list[dict[str, Any]]) -> Step:
        why = self._estimate_failure(batch)
        if why is not None:
            return self._isolate(s, batch, why)
        gas, fees = self.estimate_gas(self.call_for(batch)), market_fees(self.w3)
        spending = self.spending(s)
        while not spending.allows(gas * fees.max_fee_per_gas):
            if len(batch) == 1 or spending.cap_units is None:
                return self._capped(spending, gas * fees.max_fee_per_gas)
            batch = batch[: len(batch) // 2]
            gas = self.estimate_gas(self.call_for(batch))
        self._uncapped()
        funds = self.w3.eth.get_balance(self._key.address)
        if funds < gas * fees.max_fee_per_gas:
            note = (
                f"the sweeper key {self._key.address} holds {funds} wei, a sweep of {len(batch)} deposit(s) "
                f"may cost up to {gas * fees.max_fee_per_gas}: fund it"
            )
            log.error("%s: %s", self.network.name, note)
            return Step(Outcome.SKIPPED, note=note)
        return self._record(s, batch, gas, fees)

    def _record(self, s: Session, batch: list[dict[str, Any]], gas: int, fees: Fees) -> Step:
        nonce = self.w3.eth.get_transaction_count(self._key.address, "pending")
        tx_hash, raw = self._sign(self.call_for(batch), nonce, gas, fees)
        now = utcnow()
        sweep = records.sent(
            s,
            network=self.network.name,
            sender=self._key.address,
            nonce=nonce,
            tx_hash=tx_hash,
            attempt=attempt(tx_hash, raw, fees, now),
            deposits=batch,
            gas_limit=gas,
            now=now,
        )
        log.info("%s: sweep %s of %d deposit(s), nonce %d", self.network.name, tx_hash, len(batch), nonce)
        return Step(Outcome.SENT, sweep, raw)

    def _sign(self, call: dict[str, str], nonce: int, gas: int, fees: Fees) -> tuple[str, str]:
        return self._key.sign(
            {**call, "value": 0, "chainId": self.w3.eth.chain_id, "nonce": nonce, "gas": gas, **fees.fields()}
        )

    # -- isolation --------------------------------------------------------------------------
    def _estimate_failure(self, batch: list[dict[str, Any]]) -> str | None:
        """Why estimating this batch's flushMany fails, or None when it passes; an error that
        is not the call's own (the node) is raised: the network waits a turn. A batch that
        would need more than ``GAS_PER_DEPOSIT`` per deposit fails too: no deposit is worth
        that, and a settlement contract burning the gas a first-version forwarder passes on
        shows that way."""
        try:
            gas = self.estimate_gas(self.call_for(batch))
        except (Web3Exception, RequestException, ValueError) as exc:
            why = call_failure(exc)
            if why is None:
                raise
            return self.safe_text(why)
        if gas > GAS_PER_DEPOSIT * max(1, len(batch)):
            return f"it needs {gas:,} gas, more than {GAS_PER_DEPOSIT:,} a deposit"
        return None

    def _isolate(self, s: Session, batch: list[dict[str, Any]], why: str) -> Step:
        control = self._estimate_failure([])
        if control is not None:  # the factory itself fails: no deposit is to blame
            note = f"flushMany fails even with no deposit ({control}); nothing is held"
            log.error("%s: %s", self.network.name, note)
            return Step(Outcome.SKIPPED, note=note)
        bad = culprits(self._estimate_failure, batch, why)
        if not bad:  # every part passes on its own: the batch is too big as a whole
            log.warning(
                "%s: a batch of %d fails estimation (%s) but each half passes: sending half",
                self.network.name,
                len(batch),
                why,
            )
            return self._send(s, batch[: len(batch) // 2])
        return self._hold(s, [(d, f"gas estimation failed: {reason}") for d, reason in bad])

    def _hold(self, s: Session, bad: list[tuple[dict[str, Any], str]]) -> Step:
        now = utcnow()
        for d, reason in bad:
            holds.hold(
                s,
                self.network.name,
                uuid.UUID(d["payment_id"]),
                reason,
                held={k: int(v) for k, v in d["held"].items()},
                now=now,
            )
            log.error("%s: deposit %s of payment %s held: %s", self.network.name, d["address"], d["short_id"], reason)
        metrics.HELD.labels(self.network.name).inc(len(bad))
        return Step(Outcome.HELD)

    # -- the spending cap -------------------------------------------------------------------
    def _capped(self, spending: Spending, cost: int) -> Step:
        native = self.chain.native_token()

        def text(units: int) -> str:
            return f"{units_text(units, native.decimals)} {native.symbol}"

        if spending.cap_units is None:
            note = f"no USD rate for {native.symbol}: the spending cap cannot be checked, sweeps wait"
        else:
            note = (
                f"spending cap reached: {text(spending.spent_units)} spent in the last hour of "
                f"{text(spending.cap_units)} (SWEEP_MAX_SPEND_USD_PER_HOUR={spending.cap_usd}); the next sweep "
                f"may cost up to {text(cost)}; sweeps wait"
            )
        if self.capped_note is None:
            log.warning("%s: %s", self.network.name, note)
        self.capped_note = note
        metrics.CAPPED.labels(self.network.name).set(1)
        return Step(Outcome.CAPPED, note=note)

    def _uncapped(self) -> None:
        if self.capped_note is not None:
            log.info("%s: within the spending cap again: sweeping", self.network.name)
        self.capped_note = None
        metrics.CAPPED.labels(self.network.name).set(0)
