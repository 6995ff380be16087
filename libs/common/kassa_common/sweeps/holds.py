"""Held deposits: forwarder deposits the sweeper isolates from its batches (DESIGN §5).

One deposit must never stop the others being swept, nor drain the sweeper key by failing
again and again. So a deposit is taken out of the batches, per network:

- ``SOLO`` when it was in a batch that reverted on chain (any of the batch may be the
  cause): it is swept on its own next; if that sweep goes through in full it is free
  again, if it fails it is held;
- ``HELD`` when its own flush failed: its estimation failed, its sweep on its own
  reverted, or a confirmed sweep left some of its funds in it (a settlement contract that
  refuses the native coin, a paused token). It is never swept again until the operator
  releases it (``kassa sweep --retry-held``), which makes it ``SOLO``: one more try, on
  its own.

The sweeper writes these rows in the transaction of the step that learnt the failure;
``deposits_due`` leaves held deposits out and puts solo ones first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.models import Payment, SweepHold


class HoldStatus(StrEnum):
    SOLO = "SOLO"
    HELD = "HELD"


@dataclass(frozen=True)
class Held:
    """A held (or solo) deposit, as the operator and the merchant see it."""

    payment_id: uuid.UUID
    short_id: str
    merchant_id: uuid.UUID
    test_mode: bool
    network: str
    address: str
    settlement: str | None
    status: str
    reason: str
    held: dict[str, str]
    sweep_id: uuid.UUID | None
    times_held: int
    since: datetime
    released_at: datetime | None


def hold(
    session: Session,
    network: str,
    payment_id: uuid.UUID,
    reason: str,
    *,
    held: dict[str, int],
    now: datetime,
    sweep_id: uuid.UUID | None = None,
    status: HoldStatus = HoldStatus.HELD,
) -> None:
    """Take a deposit out of the batches (``status``), with why and what it held."""
    values = {
        "status": status,
        "reason": reason,
        "held": {k: str(v) for k, v in held.items() if v},
        "sweep_id": sweep_id,
        "updated_at": now,
    }
    held_now = 1 if status == HoldStatus.HELD else 0
    session.execute(
        insert(SweepHold)
        .values(payment_id=payment_id, network=network, times_held=held_now, created_at=now, **values)
        .on_conflict_do_update(
            index_elements=[SweepHold.payment_id, SweepHold.network],
            set_={**values, "times_held": SweepHold.times_held + held_now},
        )
    )


def clear(session: Session, network: str, payment_ids: list[uuid.UUID]) -> int:
    """Solo deposits swept in full on their own: back into the batches."""
    result = session.execute(
        sa.delete(SweepHold).where(
            SweepHold.network == network, SweepHold.payment_id.in_(payment_ids), SweepHold.status == HoldStatus.SOLO
        )
    )
    return cast(sa.CursorResult[Any], result).rowcount


def solo(session: Session, network: str, payment_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these deposits must be swept on their own."""
    if not payment_ids:
        return set()
    return set(
        session.scalars(
            sa.select(SweepHold.payment_id).where(
                SweepHold.network == network, SweepHold.status == HoldStatus.SOLO, SweepHold.payment_id.in_(payment_ids)
            )
        )
    )


def held_clause(network: str, payment_id_column: sa.ColumnExpressionArgument[uuid.UUID]) -> sa.Exists:
    """SQL: the deposit of ``payment_id_column`` is held on ``network`` (not to be swept)."""
    return sa.exists().where(
        SweepHold.payment_id == payment_id_column, SweepHold.network == network, SweepHold.status == HoldStatus.HELD
    )


def release(session: Session, ref: str, *, network: str | None, now: datetime) -> list[Held]:
    """The operator's retry: the held deposit of payment ``ref`` (its id or short id), on
    ``network`` or on every network where it is held, is swept once more, on its own."""
    rows = listing(session, network=network, payment_ref=ref, status=HoldStatus.HELD)
    if not rows:
        raise NotFound(f"no held deposit for payment {ref}" + (f" on {network}" if network else ""))
    session.execute(
        sa.update(SweepHold)
        .where(
            SweepHold.payment_id == rows[0].payment_id,
            SweepHold.status == HoldStatus.HELD,
            *([SweepHold.network == network] if network else []),
        )
        .values(status=HoldStatus.SOLO, released_at=now, updated_at=now)
    )
    return rows


def listing(
    session: Session,
    *,
    network: str | None = None,
    merchant_id: uuid.UUID | None = None,
    test_mode: bool | None = None,
    payment_ref: str | None = None,
    status: HoldStatus | None = None,
    since: datetime | None = None,
    limit: int = 500,
) -> list[Held]:
    """Held and solo deposits, oldest first, narrowed by whatever is given."""
    conds = []
    if network is not None:
        conds.append(SweepHold.network == network)
    if merchant_id is not None:
        conds.append(Payment.merchant_id == merchant_id)
    if test_mode is not None:
        conds.append(Payment.test_mode == test_mode)
    if status is not None:
        conds.append(SweepHold.status == status)
    if payment_ref is not None:
        conds.append(_payment_is(payment_ref))
    if since is not None:
        conds.append(SweepHold.updated_at >= since)
    rows = session.execute(
        sa.select(
            SweepHold,
            Payment.short_id,
            Payment.merchant_id,
            Payment.test_mode,
            Payment.address,
            Payment.settlement_address,
        )
        .join(Payment, Payment.id == SweepHold.payment_id)
        .where(*conds)
        .order_by(SweepHold.created_at, SweepHold.network)
        .limit(limit)
    )
    return [
        Held(
            h.payment_id,
            short_id,
            merchant_id,
            test_mode,
            h.network,
            address,
            settlement,
            h.status,
            h.reason,
            dict(h.held),
            h.sweep_id,
            h.times_held,
            h.created_at,
            h.released_at,
        )
        for h, short_id, merchant_id, test_mode, address, settlement in rows
    ]


def _payment_is(ref: str) -> sa.ColumnElement[bool]:
    try:
        return Payment.id == uuid.UUID(ref)
    except ValueError:
        return Payment.short_id == ref.strip().upper()
