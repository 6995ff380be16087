"""Reading refunds: by id for the merchant, by claim token for the customer, a payment's
list, the merchant's list (the dashboard's). A payment's refund totals (what its object
shows, what is refundable) are ``payments.refunded``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.ids import parse_uuid
from kassa_common.models import Payment, Refund
from kassa_common.owner import Owner

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
