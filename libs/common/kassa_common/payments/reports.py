"""The dashboard's reports on payments: a payment's history (events, deliveries, sweeps),
what sweeps moved, the daily volume and the count per status.

Plain functions of a session that return rows: a page calls one instead of building SQL, so
what it shows can be read and tested without a request. None of them changes anything.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import Event, Payment, Sweep, SweepItem, WebhookDelivery, WebhookEndpoint
from kassa_common.statuses import PaymentStatus


class PaymentHistory(NamedTuple):
    events: list[Event]
    deliveries: list[tuple[WebhookDelivery, str]]  # each with its endpoint's URL
    sweeps: list[Swept]  # forwarder mode: what sweeps moved from its deposit


class Swept(NamedTuple):
    """What one sweep moved from one payment's deposit, in one token."""

    item: SweepItem
    sweep: Sweep
    short_id: str


def payment_history(session: Session, payment_id: uuid.UUID) -> PaymentHistory:
    """What happened to a payment: its events in order and the webhook deliveries of those
    events (its transfers are on the payment object, ``payments.payment_to_dict``)."""
    events = list(
        session.scalars(sa.select(Event).where(Event.payment_id == payment_id).order_by(Event.created_at, Event.id))
    )
    deliveries = session.execute(
        sa.select(WebhookDelivery, WebhookEndpoint.url)
        .join(WebhookEndpoint)
        .where(WebhookDelivery.event_id.in_([e.id for e in events]))
        .order_by(WebhookDelivery.created_at)
    ).all()
    return PaymentHistory(
        events, [row._tuple() for row in deliveries], _swept(session, SweepItem.payment_id == payment_id)
    )


def swept(session: Session, merchant_id: uuid.UUID, test_mode: bool, limit: int = 50) -> list[Swept]:
    """The merchant's funds moved to its settlement address, newest sweep first."""
    return _swept(session, Payment.merchant_id == merchant_id, Payment.test_mode == test_mode, limit=limit)


def _swept(session: Session, *conds: sa.ColumnElement[bool], limit: int = 200) -> list[Swept]:
    rows = session.execute(
        sa.select(SweepItem, Sweep, Payment.short_id)
        .join(Sweep, Sweep.id == SweepItem.sweep_id)
        .join(Payment, Payment.id == SweepItem.payment_id)
        .where(*conds)
        .order_by(Sweep.confirmed_at.desc(), SweepItem.token)
        .limit(limit)
    )
    return [Swept(*row) for row in rows]


class DayVolume(NamedTuple):
    """The completed payments of one UTC day: their USD amount and how many."""

    day: date
    amount: Decimal
    count: int  # type: ignore[assignment]  # the field shadows tuple.count


def daily_volume(
    session: Session, merchant_id: uuid.UUID, test_mode: bool, today: date, days: int = 30, currency: str = "USD"
) -> list[DayVolume]:
    """The amount (in ``currency``: payments in other currencies are not added in) and count
    of completed payments per UTC day of completion, for the ``days`` days up to and including
    ``today``, oldest first; a day with none is a zero row.

    One query: the calendar (``generate_series``) left-joined to the payments completed in
    the window, grouped by day, so PostgreSQL sums and the zero days need no filling in.
    """
    first = today - timedelta(days=days - 1)
    since, until = (datetime.combine(d, time(), UTC) for d in (first, today + timedelta(days=1)))
    start, end = (sa.cast(sa.literal(d), sa.DateTime()) for d in (first, today))  # no zone: plain days
    calendar = sa.select(
        sa.cast(sa.func.generate_series(start, end, sa.text("interval '1 day'")), sa.Date).label("day")
    ).cte("calendar")
    done = (
        sa.select(sa.cast(sa.func.timezone("UTC", Payment.completed_at), sa.Date).label("day"), Payment.amount)
        .where(
            Payment.merchant_id == merchant_id,
            Payment.test_mode == test_mode,
            Payment.status == PaymentStatus.COMPLETED,
            Payment.currency == currency,
            Payment.completed_at >= since,
            Payment.completed_at < until,
        )
        .cte("done")
    )
    rows = session.execute(
        sa.select(calendar.c.day, sa.func.coalesce(sa.func.sum(done.c.amount), 0), sa.func.count(done.c.amount))
        .select_from(calendar.outerjoin(done, done.c.day == calendar.c.day))
        .group_by(calendar.c.day)
        .order_by(calendar.c.day)
    )
    return [DayVolume(day, Decimal(amount), count) for day, amount, count in rows]


def volume_currencies(session: Session, merchant_id: uuid.UUID, test_mode: bool, since: datetime) -> list[str]:
    """The currencies of the merchant's payments completed since ``since``, most used first."""
    return list(
        session.scalars(
            sa.select(Payment.currency)
            .where(
                Payment.merchant_id == merchant_id,
                Payment.test_mode == test_mode,
                Payment.status == PaymentStatus.COMPLETED,
                Payment.completed_at >= since,
            )
            .group_by(Payment.currency)
            .order_by(sa.func.count().desc(), Payment.currency)
        )
    )


def status_counts(session: Session, merchant_id: uuid.UUID, test_mode: bool) -> dict[str, int]:
    """How many of the merchant's payments of this mode are in each status (every status, zero included)."""
    counts = dict(
        session.execute(
            sa.select(Payment.status, sa.func.count())
            .where(Payment.merchant_id == merchant_id, Payment.test_mode == test_mode)
            .group_by(Payment.status)
        ).all()
    )
    return {status: counts.get(status, 0) for status in PaymentStatus}
