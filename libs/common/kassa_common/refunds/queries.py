"""Reading refunds: by id for the merchant, by claim token for the customer, a payment's
list, the merchant's list (the dashboard's), and ``refund_totals`` (what the payment objects
show)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.ids import parse_uuid
from kassa_common.models import Payment, Refund
from kassa_common.owner import Owner
from kassa_common.refunds.amounts import NONE, RefundTotals, may_have_refunds
from kassa_common.statuses import RefundStatus

HELD_TOTALS = "kassa.refunds.held_totals"  # in ``Session.info``: ``hold_totals``'s answers
HELD = (RefundStatus.AWAITING_ADDRESS, RefundStatus.AWAITING_PAYMENT, RefundStatus.COMPLETED)
CLAIM_TOKEN_MAX = 64


def find_refund(session: Session, owner: Owner, ref: str) -> Refund:
    """The merchant's refund of this mode by id, or NotFound (never confirm others exist)."""
    rid = parse_uuid(ref)
    refund = session.get(Refund, rid) if rid else None
    if refund is None or refund.merchant_id != owner.merchant_id or refund.test_mode != owner.test_mode:
        raise NotFound("refund not found")
    return refund


def find_by_claim_token(session: Session, token: str) -> Refund | None:
    """The refund a claim link names (None for anything else)."""
    if not token or len(token) > CLAIM_TOKEN_MAX:
        return None
    return session.scalars(sa.select(Refund).where(Refund.claim_token == token)).first()


def refunds_of(session: Session, payment_id: uuid.UUID) -> list[Refund]:
    """A payment's refunds, newest first."""
    return list(
        session.scalars(
            sa.select(Refund).where(Refund.payment_id == payment_id).order_by(Refund.created_at.desc(), Refund.id)
        )
    )


def list_refunds(
    session: Session, owner: Owner, *, status: str | None, page: int, page_size: int
) -> tuple[list[tuple[Refund, str]], int]:
    """A page of the owner's refunds with this status (None: any), newest first, each with its
    payment's short id; and how many there are in all."""
    where = [Refund.merchant_id == owner.merchant_id, Refund.test_mode == owner.test_mode]
    if status:
        where.append(Refund.status == status)
    total = session.scalar(sa.select(sa.func.count()).select_from(Refund).where(*where)) or 0
    rows = session.execute(
        sa.select(Refund, Payment.short_id)
        .join(Payment, Payment.id == Refund.payment_id)
        .where(*where)
        .order_by(Refund.created_at.desc(), Refund.id)
        .limit(page_size)
        .offset((page - 1) * page_size)
    ).all()
    return [(refund, short_id) for refund, short_id in rows], total


def refund_totals(session: Session, payment_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, RefundTotals]:
    """The refunds of these payments summed per network (a payment without any is absent)."""
    ids = list(payment_ids)
    if not ids:
        return {}
    rows = session.execute(
        sa.select(Refund.payment_id, Refund.network, Refund.status, sa.func.sum(Refund.amount_units))
        .where(Refund.payment_id.in_(ids), Refund.status.in_(HELD))
        .group_by(Refund.payment_id, Refund.network, Refund.status)
    )
    held: dict[uuid.UUID, dict[str, int]] = {}
    refunded: dict[uuid.UUID, dict[str, int]] = {}
    for payment_id, network, status, units in rows:
        h = held.setdefault(payment_id, {})
        h[network] = h.get(network, 0) + int(units)
        if status == RefundStatus.COMPLETED:
            r = refunded.setdefault(payment_id, {})
            r[network] = r.get(network, 0) + int(units)
    return {pid: RefundTotals(held[pid], refunded.get(pid, {})) for pid in held}


def hold_totals(session: Session, transfers: Mapping[uuid.UUID, list[Any]]) -> None:
    """For a batch that holds these payments locked (``payments.settle.lock_for_reports``),
    with their ``transfers`` as they stood: read their refunds once (only those of payments
    that may have any), so their events in this transaction do not ask per payment. Valid for
    the transaction: a refund is only made under its payment's lock."""
    maybe = [pid for pid, rows in transfers.items() if may_have_refunds(rows)]
    found = refund_totals(session, maybe) if maybe else {}
    held = session.info.setdefault(HELD_TOTALS, {})
    for pid in transfers:
        held[pid] = found.get(pid, NONE)


def held_totals(session: Session, payment_id: uuid.UUID) -> RefundTotals | None:
    """The payment's totals as ``hold_totals`` read them in this session (None: not read)."""
    held = session.info.get(HELD_TOTALS)
    return held.get(payment_id) if held else None
