"""Reading payments: by id or short id within an owner's objects, by short id for the
public checkout, and the merchant's filtered list, by pages or in batches (CSV export)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.ids import looks_like_short_id, parse_uuid
from kassa_common.models import Payment
from kassa_common.owner import Owner
from kassa_common.paging import newest_first, page_of


def find_payment(session: Session, owner: Owner, ref: str, *, lock: bool = False) -> Payment:
    """A payment of this merchant and mode by UUID or short id; NotFound for anything else."""
    pid = parse_uuid(ref)
    if pid is not None:
        cond = Payment.id == pid
    elif looks_like_short_id(ref):
        cond = Payment.short_id == ref.upper()
    else:
        raise NotFound("payment not found")
    stmt = sa.select(Payment).where(
        cond, Payment.merchant_id == owner.merchant_id, Payment.test_mode == owner.test_mode
    )
    if lock:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    payment = session.scalars(stmt).first()
    if payment is None:
        raise NotFound("payment not found")
    return payment


def find_by_short_id(session: Session, short_id: str) -> Payment | None:
    """Any payment by its short id: the checkout page's address is all a customer has."""
    if not looks_like_short_id(short_id):
        return None
    return session.scalars(sa.select(Payment).where(Payment.short_id == short_id.upper())).first()


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def payment_filters(
    owner: Owner, *, status: str | None, search: str | None, since: date | None = None, until: date | None = None
) -> list[sa.ColumnElement[bool]]:
    """The owner's payments with this status (None: any) matching ``search``: email and name
    (case-insensitive substring) and ids exactly, created from the UTC day ``since`` through
    the UTC day ``until`` (both included; None: no bound). The dashboard's list and its CSV
    export both filter with this."""
    conds: list[sa.ColumnElement[bool]] = [
        Payment.merchant_id == owner.merchant_id,
        Payment.test_mode == owner.test_mode,
    ]
    if status:
        conds.append(Payment.status == status)
    if search:
        matches: list[sa.ColumnElement[bool]] = [
            Payment.customer_email.ilike(_like(search), escape="\\"),
            Payment.customer_name.ilike(_like(search), escape="\\"),
        ]
        if (pid := parse_uuid(search)) is not None:
            matches.append(Payment.id == pid)
        if looks_like_short_id(search):
            matches.append(Payment.short_id == search.upper())
        conds.append(sa.or_(*matches))
    if since is not None:
        conds.append(Payment.created_at >= datetime.combine(since, time(), UTC))
    if until is not None and until < date.max:  # the last day there is bounds nothing
        conds.append(Payment.created_at < datetime.combine(until + timedelta(days=1), time(), UTC))
    return conds


def list_payments(
    session: Session,
    owner: Owner,
    *,
    page: int,
    page_size: int,
    status: str | None,
    search: str | None,
    since: date | None = None,
    until: date | None = None,
) -> tuple[list[Payment], int]:
    """A page of the owner's payments, newest first (``payment_filters``)."""
    conds = payment_filters(owner, status=status, search=search, since=since, until=until)
    return page_of(session, Payment, conds, page, page_size)


def payment_batches(
    session: Session,
    owner: Owner,
    *,
    status: str | None,
    search: str | None,
    batch_size: int,
    since: date | None = None,
    until: date | None = None,
) -> Iterator[list[Payment]]:
    """Every payment the list shows with these filters, in its order, ``batch_size`` at a
    time from a server-side cursor: an export of any size in bounded memory."""
    stmt = (
        sa.select(Payment)
        .where(*payment_filters(owner, status=status, search=search, since=since, until=until))
        .order_by(*newest_first(Payment))
        .execution_options(yield_per=batch_size)
    )
    for batch in session.scalars(stmt).partitions():
        yield list(batch)
