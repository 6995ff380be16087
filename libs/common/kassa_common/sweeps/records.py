"""The sweep rows: the only code that inserts or updates a ``Sweep``.

A sweep is written before it is broadcast (the signed bytes of every attempt kept, its
deposits' due transfers claimed in the same transaction), then follows the chain:

    PENDING --mined--> MINED --confirmed--> CONFIRMED
       ^                 |
       +----reorged------+        (either) --failed--> FAILED (its transfers due again)

A replacement (same nonce, higher fees) adds an attempt; a reverted sweep is costed, then
failed. The sweeper process decides (receipts, confirmations, nonces) and calls these
functions in its step's transaction; they change the row and its transfers, nothing else.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from kassa_common.models import Payment, Sweep
from kassa_common.statuses import SweepStatus
from kassa_common.sweeps.deposits import claim, record_sweep, release


@dataclass(frozen=True)
class Cost:
    """What a mined sweep cost: gas used times the effective gas price, in the native
    coin's base units (``units``), and in USD when a rate was at hand."""

    gas_used: int
    effective_gas_price: int
    units: int
    usd: Decimal | None


def _set(sweep: Sweep, now: datetime, **values: Any) -> None:
    for column, value in values.items():
        setattr(sweep, column, value)
    sweep.updated_at = now


def _cost(cost: Cost) -> dict[str, Any]:
    return {
        "gas_used": cost.gas_used,
        "effective_gas_price": cost.effective_gas_price,
        "cost_units": cost.units,
        "cost_usd": cost.usd,
    }


def sent(
    session: Session,
    *,
    network: str,
    sender: str,
    nonce: int,
    tx_hash: str,
    attempt: dict[str, Any],
    deposits: list[dict[str, Any]],
    gas_limit: int,
    now: datetime,
) -> Sweep:
    """A signed sweep of ``deposits`` (as ``planned`` records them), before its broadcast:
    the row, and the deposits' due transfers claimed for it."""
    sweep = Sweep(
        id=uuid.uuid4(),
        network=network,
        sender=sender,
        nonce=nonce,
        status=SweepStatus.PENDING,
        tx_hash=tx_hash,
        attempts=[attempt],
        deposits=deposits,
        deposit_count=len(deposits),
        gas_limit=gas_limit,
        created_at=now,
        updated_at=now,
    )
    session.add(sweep)
    session.flush()
    claim(session, sweep.id, network, [uuid.UUID(d["payment_id"]) for d in deposits])
    return sweep


def replaced(sweep: Sweep, tx_hash: str, attempt: dict[str, Any], *, now: datetime) -> None:
    """Sent again with the same nonce and higher fees: whichever attempt is mined counts."""
    _set(sweep, now, tx_hash=tx_hash, attempts=[*sweep.attempts, attempt])


def reorged(sweep: Sweep, *, now: datetime) -> None:
    """Its block left the chain: pending again (it is broadcast again)."""
    _set(sweep, now, status=SweepStatus.PENDING, block_number=None)


def mined(sweep: Sweep, tx_hash: str, block_number: int, *, now: datetime) -> None:
    """Mined in ``block_number`` (by the attempt ``tx_hash``), not confirmed yet."""
    if (sweep.status, sweep.tx_hash, sweep.block_number) != (SweepStatus.MINED, tx_hash, block_number):
        _set(sweep, now, status=SweepStatus.MINED, tx_hash=tx_hash, block_number=block_number)


def reverted(sweep: Sweep, tx_hash: str, block_number: int, cost: Cost, *, now: datetime) -> None:
    """Mined but reverted: what it cost is kept (the spending cap counts it); ``failed`` follows."""
    _set(sweep, now, tx_hash=tx_hash, block_number=block_number, **_cost(cost))


def failed(session: Session, sweep: Sweep, why: str, *, now: datetime) -> int:
    """It will never move anything: its transfers are due again (the count returned)."""
    released = release(session, sweep.id)
    _set(sweep, now, status=SweepStatus.FAILED, error=why)
    return released


def confirmed(
    session: Session,
    sweep: Sweep,
    *,
    block_number: int,
    cost: Cost,
    moved: dict[uuid.UUID, dict[str, int]],
    left: dict[uuid.UUID, set[str]],
    error: str | None,
    now: datetime,
) -> list[Payment]:
    """Confirmed: what it ``moved`` (payment -> token -> base units) is recorded, each
    payment it moved funds of fires ``payment.swept`` (returned); what it ``left`` (payment
    -> tokens) stays due; ``error`` says what it did not move."""
    paid = record_sweep(session, sweep.id, sweep.tx_hash, moved, now=now, left=left)
    _set(
        sweep,
        now,
        status=SweepStatus.CONFIRMED,
        block_number=block_number,
        confirmed_at=now,
        error=error,
        **_cost(cost),
    )
    return paid
