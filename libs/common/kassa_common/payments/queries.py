"""Reading payments: by id or short id within an owner's objects, by short id for the
public checkout, the merchant's filtered list, by pages or in batches (CSV export), and
what the payment object shows besides the row (its transfers: ``kassa_common.transfers``; its
refund totals: ``refunded``). ``payment_object`` reads those and shapes
(``shape.payment_to_dict``, which reads nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, object_session
from sqlalchemy.orm.exc import UnmappedInstanceError

from kassa_common.errors import NotFound
from kassa_common.ids import looks_like_short_id, parse_uuid
from kassa_common.models import Payment
from kassa_common.owner import Owner
from kassa_common.paging import newest_first, page_of
from kassa_common.payments.batch import batch_of
from kassa_common.payments.refunded import NONE, RefundTotals, may_have_refunds, refund_totals
from kassa_common.payments.shape import PaymentRow, payment_to_dict
from kassa_common.transfers import transfers_of

# What ``payment_to_dict`` reads of a payment, and its merchant: a batch can be read (or
# returned by an UPDATE) as plain rows, without loading ORM objects. The list is
# ``PaymentRow``'s fields, the ``Payment`` attributes of the same names, in their order.
PAYMENT_COLUMNS = tuple(getattr(Payment, name) for name in PaymentRow._fields)


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


def _session_of(p: Any) -> Session | None:
    """The session of a ``Payment`` (None for a ``PaymentRow`` or a detached payment)."""
    if isinstance(p, tuple):  # a PaymentRow: asking SQLAlchemy would build (and catch) an exception
        return None
    try:
        return object_session(p)
    except UnmappedInstanceError:
        return None


def _refunds_of(session: Session | None, p: Any, transfers: list[Any]) -> RefundTotals:
    """The payment's refund totals: held by its session's batch, or read (none when it never
    had confirmed funds, or has no session)."""
    if session is None:
        return NONE
    batch = batch_of(session)
    if batch is not None and p.id in batch.refunds:
        return batch.refunds[p.id]
    if not may_have_refunds(transfers):
        return NONE
    return refund_totals(session, [p.id]).get(p.id, NONE)


def payment_object(p: Any, transfers: list[Any] | None = None, refunds: RefundTotals | None = None) -> dict[str, Any]:
    """The payment object (``shape.payment_to_dict``) of a ``Payment`` or a ``PaymentRow``, with
    what the caller does not bring read from the payment's own session. ``transfers``: its rows
    from ``transfers_of`` when the caller has them (a list, a new payment's ``[]``); otherwise
    they are read. ``refunds``: its ``refund_totals`` when the caller has them; otherwise those
    its session's batch holds, or read if it may have any. A payment without a session (a
    ``PaymentRow``, a detached payment) has none of either."""
    session = _session_of(p)
    if transfers is None:
        transfers = transfers_of(session, [p.id])[p.id] if session is not None else []
    if refunds is None:
        refunds = _refunds_of(session, p, transfers)
    return payment_to_dict(p, transfers, refunds)
