"""The deposits' side of sweeps: which forwarder deposits hold confirmed funds due for a
sweep, and what a confirmed sweep records on each payment.

A confirmed transfer to a forwarder deposit (counted or not: the payment's own token,
a stray token, a late payment) is due for a sweep (``transfers.sweep_due``, set by
``settle``) until a sweep moves it. The sweeper claims due transfers for the sweep it
sends (``claim``), gives them back if that sweep fails (``release``), and once the sweep
is confirmed records what it moved (``record_sweep``): the transfers are done, the
amounts are kept per payment and token, and each payment whose deposit gave something
gets ``payment.swept`` through ``apply``; funds a sweep left in a deposit stay due, for
the sweep after the operator releases its hold (``holds``: a held deposit is never
due, a solo one comes first). Chain work (balances, signing, receipts) is the sweeper
service's; this module only reads and writes rows (the sweep row itself: ``records``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.networks import Network
from kassa_common.models import Payment, SweepItem, Transfer
from kassa_common.payments.transitions import Trigger, apply
from kassa_common.pricing.amounts import from_base_units
from kassa_common.pricing.fixed import RateProvider, RateUnavailable
from kassa_common.statuses import TransferStatus
from kassa_common.sweeps import holds


@dataclass(frozen=True)
class Deposit:
    """A forwarder deposit with confirmed funds not yet swept."""

    payment_id: uuid.UUID
    short_id: str
    merchant_id: uuid.UUID
    address: str
    settlement: str
    salt: str  # 0x + 64 hex
    due: dict[str, int] = field(default_factory=dict)  # token symbol -> confirmed base units
    since: datetime | None = None  # when the oldest of those funds was first seen
    solo: bool = False  # to be swept on its own (``holds``)


@dataclass(frozen=True)
class SweepPolicy:
    """``SWEEP_MIN_USD`` / ``SWEEP_MAX_AGE_HOURS``: sweep a deposit once its confirmed value
    is worth the gas, or once its funds have waited long enough anyway."""

    min_usd: Decimal = Decimal(10)
    max_age: timedelta = timedelta(hours=24)

    def due(self, usd_value: Decimal | None, since: datetime, now: datetime) -> bool:
        """``usd_value`` None: a rate is missing, so only the age can decide."""
        return (usd_value is not None and usd_value >= self.min_usd) or since <= now - self.max_age


def usd_value(network: Network, amounts: dict[str, int], rates: RateProvider) -> Decimal | None:
    total = Decimal(0)
    for symbol, units in amounts.items():
        token = network.token(symbol)
        try:
            rate = rates.usd_rate(symbol)
        except RateUnavailable:
            return None
        if token is None:
            return None
        total += from_base_units(units, token.decimals) * rate
    return total


def _rowcount(result: sa.Result[Any]) -> int:
    """The rows an UPDATE changed (its result is a ``CursorResult``)."""
    return cast(sa.CursorResult[Any], result).rowcount


def _unclaimed(network: str) -> tuple[sa.ColumnExpressionArgument[bool], ...]:
    return (
        Transfer.network == network,
        Transfer.sweep_due,
        Transfer.status == TransferStatus.CONFIRMED,
        Transfer.sweep_id.is_(None),
    )


def deposits_due(
    session: Session,
    network: Network,
    *,
    policy: SweepPolicy | None,
    rates: RateProvider,
    now: datetime,
    merchant_id: uuid.UUID | None = None,
    only: list[uuid.UUID] | None = None,
    limit: int = 50,
) -> list[Deposit]:
    """The deposits on ``network`` whose unclaimed confirmed funds are due, the solo ones
    first, then oldest first; never a held one. ``policy`` None: every one with such funds
    (an operator's ``kassa sweep``); ``only``: these payments' deposits alone."""
    stmt = (
        sa.select(
            Transfer.payment_id, Transfer.token, sa.func.sum(Transfer.amount_units), sa.func.min(Transfer.created_at)
        )
        .where(*_unclaimed(network.name), ~holds.held_clause(network.name, Transfer.payment_id))
        .group_by(Transfer.payment_id, Transfer.token)
    )
    if merchant_id is not None:
        stmt = stmt.join(Payment, Payment.id == Transfer.payment_id).where(Payment.merchant_id == merchant_id)
    if only is not None:
        stmt = stmt.where(Transfer.payment_id.in_(only))
    due: dict[uuid.UUID, dict[str, int]] = defaultdict(dict)
    since: dict[uuid.UUID, datetime] = {}
    for payment_id, token, units, first in session.execute(stmt):
        due[payment_id][token] = int(units)
        since[payment_id] = min(since.get(payment_id, first), first)
    chosen = [pid for pid in due if policy is None or policy.due(usd_value(network, due[pid], rates), since[pid], now)]
    alone = holds.solo(session, network.name, chosen)
    chosen = sorted(chosen, key=lambda pid: (pid not in alone, since[pid]))[:limit]
    if not chosen:
        return []
    payments = {
        p.id: p
        for p in session.execute(
            sa.select(
                Payment.id,
                Payment.short_id,
                Payment.merchant_id,
                Payment.address,
                Payment.settlement_address,
                Payment.deposit_salt,
            ).where(Payment.id.in_(chosen))
        )
    }
    return [
        Deposit(
            pid,
            payments[pid].short_id,
            payments[pid].merchant_id,
            payments[pid].address,
            payments[pid].settlement_address,
            payments[pid].deposit_salt,
            due[pid],
            since[pid],
            pid in alone,
        )
        for pid in chosen
    ]


def claim(session: Session, sweep_id: uuid.UUID, network: str, payment_ids: list[uuid.UUID]) -> int:
    """Give the deposits' due transfers to the sweep that is about to move them."""
    return _rowcount(
        session.execute(
            sa.update(Transfer)
            .where(*_unclaimed(network), Transfer.payment_id.in_(payment_ids))
            .values(sweep_id=sweep_id)
        )
    )


def release(session: Session, sweep_id: uuid.UUID) -> int:
    """The sweep failed: its transfers are due again (the next sweep takes them)."""
    return _rowcount(
        session.execute(
            sa.update(Transfer).where(Transfer.sweep_id == sweep_id, Transfer.sweep_due).values(sweep_id=None)
        )
    )


def already_empty(session: Session, network: str, payment_ids: list[uuid.UUID]) -> int:
    """The deposits hold nothing on chain any more (anyone may flush a deposit, the merchant
    too): their funds are at the settlement address already, nothing is due."""
    return _rowcount(
        session.execute(
            sa.update(Transfer)
            .where(*_unclaimed(network), Transfer.payment_id.in_(payment_ids))
            .values(sweep_due=False)
        )
    )


def record_sweep(
    session: Session,
    sweep_id: uuid.UUID,
    tx_hash: str,
    moved: dict[uuid.UUID, dict[str, int]],
    *,
    now: datetime,
    left: dict[uuid.UUID, set[str]] | None = None,
) -> list[Payment]:
    """A confirmed sweep moved ``moved`` (payment -> token -> base units): its transfers are
    done, the amounts are kept, and each payment it moved funds of fires ``payment.swept``.
    ``left`` (payment -> tokens): what it left in the deposits; those transfers stay due."""
    items = [
        SweepItem(sweep_id=sweep_id, payment_id=pid, token=token, amount_units=units)
        for pid, tokens in moved.items()
        for token, units in tokens.items()
        if units > 0
    ]
    # the payments first, in a fixed order, as the settler does (payment, then transfer): a
    # transfer reported again meanwhile waits instead of deadlocking with this
    swept = [
        apply(session, pid, Trigger.RECORD_SWEEP, now=now, swept_at=now, sweep_tx_hash=tx_hash)
        for pid in sorted({item.payment_id for item in items})
    ]
    session.add_all(items)
    for pid, tokens in (left or {}).items():
        session.execute(
            sa.update(Transfer)
            .where(Transfer.sweep_id == sweep_id, Transfer.payment_id == pid, Transfer.token.in_(tokens))
            .values(sweep_id=None)
        )
    session.execute(sa.update(Transfer).where(Transfer.sweep_id == sweep_id).values(sweep_due=False))
    return swept
