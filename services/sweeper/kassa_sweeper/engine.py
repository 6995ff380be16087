"""Sweeping one network, one step at a time, under that network's lock.

A step follows the sweep in flight, or plans and sends the next one:

- **plan**: the deposits due (``sweeps.deposits_due``: never a held one) and what
  each holds on chain now; a deposit that holds nothing was flushed already (anyone may
  flush one) and is simply done; the rest go into one ``flushMany``, each with the tokens
  it holds (``sending``: a solo deposit alone, a failing one isolated and held, the batch
  cut to the key's spending cap).
- **send**: the signed transaction (its raw bytes too) is written and the deposits' due
  transfers are claimed in one commit, and only then broadcast: a crash in between only
  means broadcasting the same bytes again.
- **follow**: unmined after ``SWEEP_REPLACE_SECONDS`` → the same nonce again with higher
  fees (whichever attempt is mined counts); its nonce taken by another transaction →
  failed, and its transfers go to the next sweep; mined then gone in a reorg → pending
  again, and broadcast again; mined → ``confirming`` (reverted: its deposits isolated;
  confirmed: what moved recorded, what stayed held).

One sweep is in flight per network at a time, and the step holds a transaction-level
advisory lock on the network: two sweepers, or a sweeper and ``kassa sweep``, take turns
instead of racing for the key's nonce or sweeping a deposit twice.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, cast

import sqlalchemy as sa
from eth_typing import ChecksumAddress, HexStr
from requests import RequestException
from sqlalchemy.orm import Session, sessionmaker
from web3.exceptions import TransactionNotFound, Web3Exception
from web3.types import TxParams

from kassa_common import sweeps
from kassa_common.chains import forwarder
from kassa_common.chains.locks import lock_key
from kassa_common.chains.networks import Network
from kassa_common.chains.rpc import scrub
from kassa_common.db import unit_of_work
from kassa_common.models import Sweep
from kassa_common.pricing.fixed import RateProvider
from kassa_common.statuses import SweepStatus
from kassa_common.sweeps import Deposit, SweepPolicy, records
from kassa_common.timefmt import utcnow
from kassa_sweeper import budget, metrics
from kassa_sweeper.chain import DepositChain
from kassa_sweeper.confirming import Confirming
from kassa_sweeper.sending import Sending
from kassa_sweeper.steps import Outcome, Plan, Step, attempt, planned
from kassa_sweeper.txs import Fees, Signer, broadcast, market_fees

__all__ = ["NetworkSweeper", "Outcome", "Plan", "Step", "planned"]
log = logging.getLogger("kassa.sweeper")
PENDING, MINED, CONFIRMED, FAILED = SweepStatus
IN_FLIGHT = (PENDING, MINED)
GAS_MARGIN = 1.25
DEFAULT_CAP_USD = Decimal(100)

DEFAULT_POLICY = SweepPolicy()  # frozen: one instance serves every sweeper


class NetworkSweeper(Sending, Confirming):
    def __init__(
        self,
        network: Network,
        sessions: sessionmaker[Session],
        chain: DepositChain,
        signer: Signer | None,
        rates: RateProvider,
        *,
        policy: SweepPolicy = DEFAULT_POLICY,
        batch_size: int = 50,
        replace_after: timedelta = timedelta(minutes=3),
        cap_usd: Decimal = DEFAULT_CAP_USD,
    ) -> None:
        self.network, self.sessions, self.chain, self.signer, self.rates = network, sessions, chain, signer, rates
        self.policy, self.batch_size, self.replace_after, self.cap_usd = policy, batch_size, replace_after, cap_usd
        self.w3 = chain.w3
        self.lock_key = lock_key(network.name, "sweeper")

    # -- the step ---------------------------------------------------------------------------
    def tick(
        self, *, force: bool = False, merchant_id: uuid.UUID | None = None, only: list[uuid.UUID] | None = None
    ) -> Step:
        """One step; ``force`` sweeps every deposit with confirmed funds, whatever the policy;
        ``merchant_id``, ``only``: that merchant's deposits, these payments' deposits."""
        if self.signer is None:
            raise ValueError("no sweeper key: SWEEPER_PRIVATE_KEY pays the sweeps' gas")
        with unit_of_work(self.sessions) as s:
            if not s.scalar(sa.select(sa.func.pg_try_advisory_xact_lock(self.lock_key))):
                return Step(Outcome.BUSY)
            sweep = s.scalars(
                sa.select(Sweep)
                .where(Sweep.network == self.network.name, Sweep.status.in_(IN_FLIGHT))
                .order_by(Sweep.nonce)
            ).first()
            step = self._follow(s, sweep) if sweep is not None else self._start(s, force, merchant_id, only)
        if step.broadcast is not None:
            try:
                broadcast(self.w3, step.broadcast)
            except (Web3Exception, RequestException, ValueError) as exc:  # recorded: the next step sends it again
                log.warning(
                    "%s: broadcasting sweep %s failed (%s); it is sent again next time",
                    self.network.name,
                    step.sweep.tx_hash if step.sweep else None,
                    self.safe(exc),
                )
        return step

    def plan(
        self,
        session: Session,
        *,
        force: bool = False,
        merchant_id: uuid.UUID | None = None,
        only: list[uuid.UUID] | None = None,
    ) -> Plan:
        deposits = sweeps.deposits_due(
            session,
            self.network,
            policy=None if force else self.policy,
            rates=self.rates,
            now=utcnow(),
            merchant_id=merchant_id,
            only=only,
            limit=self.batch_size,
        )
        return Plan(deposits, self.chain.balances(d.address for d in deposits) if deposits else {})

    def call_for(self, planned: list[dict[str, Any]]) -> dict[str, str]:
        """The ``flushMany`` of planned deposits (``steps.planned``, all of one factory), each
        listing the tokens it holds; a replacement rebuilds the same call from the sweep's record."""
        return self.chain.flush_many(
            [(d["settlement"], d["salt"], [t for t in d["held"] if t != self.chain.native]) for d in planned],
            planned[0].get("factory") if planned else None,
        )

    def planned(self, plan: Plan, deposits: list[Deposit] | None = None) -> list[dict[str, Any]]:
        """``deposits`` (default: every full one of the plan) as a sweep records them, each with
        the factory its address belongs to (this network's, or an earlier version's: None if
        neither, and the deposit cannot be flushed)."""
        current = self.chain.factory.address
        out = []
        for d in plan.full() if deposits is None else deposits:
            factory = forwarder.factory_of(d.address, d.settlement, bytes.fromhex(d.salt[2:]), current)
            out.append(planned(d, plan, None if factory == current else factory or "unknown"))
        return out

    def estimate_gas(self, call: dict[str, str]) -> int:
        sender = {"from": self.signer.address} if self.signer else {}  # no key: a dry run's estimate
        return int(self.w3.eth.estimate_gas(cast(TxParams, {**sender, **call})) * GAS_MARGIN) + 20_000

    def spending(self, session: Session) -> budget.Spending:
        """What the key spent here in the last hour, against ``SWEEP_MAX_SPEND_USD_PER_HOUR``."""
        spent = budget.spending(
            session,
            self.network,
            self.chain.native_token().symbol,
            self._key.address,
            self.cap_usd,
            self.rates,
            utcnow(),
        )
        metrics.SPENT.labels(self.network.name).set(spent.spent_units)
        return spent

    # -- following --------------------------------------------------------------------------
    def _follow(self, s: Session, sweep: Sweep) -> Step:
        used = self.w3.eth.get_transaction_count(
            cast(ChecksumAddress, sweep.sender), "latest"
        )  # before the receipts: no race
        receipt = self._receipt(sweep)
        if receipt is not None:
            return self._mined(s, sweep, receipt)
        if sweep.status == MINED:  # its block left the chain: it is pending again
            log.warning("%s: sweep %s was reorganised out; sending it again", self.network.name, sweep.tx_hash)
            records.reorged(sweep, now=utcnow())
            return Step(Outcome.WAITING, sweep, sweep.attempts[-1]["raw"])
        if used > sweep.nonce:
            return self._fail(s, sweep, f"nonce {sweep.nonce} was used by another transaction")
        last = datetime.fromisoformat(sweep.attempts[-1]["sent_at"])
        if utcnow() - last >= self.replace_after:
            return self._replace(sweep)
        known = self._known(sweep.tx_hash)
        return Step(Outcome.WAITING, sweep, None if known else sweep.attempts[-1]["raw"])

    def _receipt(self, sweep: Sweep) -> dict[str, Any] | None:
        for sent in reversed(sweep.attempts):
            try:
                return dict(self.w3.eth.get_transaction_receipt(sent["tx_hash"]))
            except TransactionNotFound:
                continue
        return None

    def _known(self, tx_hash: str) -> bool:
        try:
            self.w3.eth.get_transaction(HexStr(tx_hash))
            return True
        except TransactionNotFound:
            return False

    def _replace(self, sweep: Sweep) -> Step:
        last = sweep.attempts[-1]
        fees = Fees(last["max_fee_per_gas"], last["max_priority_fee_per_gas"]).replacing(market_fees(self.w3))
        tx_hash, raw = self._sign(self.call_for(sweep.deposits), sweep.nonce, sweep.gas_limit, fees)
        now = utcnow()
        records.replaced(sweep, tx_hash, attempt(tx_hash, raw, fees, now), now=now)
        log.warning(
            "%s: sweep nonce %d unmined for %s; replaced by %s (max fee %d)",
            self.network.name,
            sweep.nonce,
            self.replace_after,
            tx_hash,
            fees.max_fee_per_gas,
        )
        return Step(Outcome.REPLACED, sweep, raw)

    # -- helpers ------------------------------------------------------------------------------
    def _usd(self, cost_units: int) -> Decimal | None:
        value = sweeps.usd_value(self.network, {self.chain.native_token().symbol: cost_units}, self.rates)
        return value.quantize(Decimal("0.01")) if value is not None else None

    def safe(self, exc: BaseException) -> str:
        """An error without the RPC URL or its parts (its path, query or user info may carry a key:
        requests' errors quote the path alone)."""
        return self.safe_text(str(exc))

    def safe_text(self, text: str) -> str:
        for url in self.network.nodes:
            text = scrub(text.replace(url, f"<{self.network.name} RPC>"), url)
        return text
