"""Payment events: the webhook body of each transition, written to the outbox with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_common.models import Event, Payment
from kassa_common.payments.batch import batch_of
from kassa_common.payments.queries import payment_object
from kassa_common.payments.refunded import NONE, RefundTotals, may_have_refunds, refund_totals
from kassa_common.timefmt import iso, utcnow
from kassa_common.transfers import transfers_of


def payment_event(
    payment: Any,
    event_type: EventType,
    now: datetime,
    transfers: list[Any] | None = None,
    *,
    timestamp: str | None = None,
    refunds: RefundTotals | None = None,
) -> EventEnvelope:
    """``timestamp``: ``iso(now)``, when the caller has it already."""
    shown = payment_object(payment, transfers, refunds)
    data = {"payment_id": shown["id"], **shown}
    return EventEnvelope(new_event_id(), event_type, timestamp or iso(now), payment.test_mode, data)


def _row(
    payment: Any,
    event_type: EventType,
    now: datetime,
    transfers: list[Any] | None = None,
    *,
    timestamp: str | None = None,
    refunds: RefundTotals | None = None,
) -> dict[str, Any]:
    event = payment_event(payment, event_type, now, transfers, timestamp=timestamp, refunds=refunds)
    return outbox.outbox_row(
        event.to_message(), merchant_id=payment.merchant_id, test_mode=payment.test_mode, payment_id=payment.id, now=now
    )


def record_payment_event(
    session: Session,
    payment: Payment,
    event_type: EventType,
    *,
    now: datetime | None = None,
    transfers: list[Any] | None = None,
) -> None:
    """``transfers``: the payment's (``kassa_common.transfers.transfers_of``) when known, ``[]`` for a new one.

    In the settler's batch (``batch.batch_of``), which writes its events together, the row
    joins the batch's ``events`` instead, with the refund totals the batch holds (its payments
    are detached from the session)."""
    batch = batch_of(session)
    if batch is not None:
        refunds = batch.refunds.get(payment.id)
        batch.events.append(_row(payment, event_type, now or utcnow(), transfers, refunds=refunds))
        return
    session.add(Event(**_row(payment, event_type, now or utcnow(), transfers)))


def record_payment_events(
    session: Session,
    payments: Sequence[Any],
    event_type: EventType,
    *,
    now: datetime,
    transfers: Mapping[Any, list[Any]] | None = None,
) -> int:
    """The same event for many payments (``Payment``s or ``shape.PaymentRow``s), written in one
    streamed COPY. ``transfers``: theirs by payment id (``kassa_common.transfers.transfers_of``) when the caller
    has them (a payment missing from it has none); otherwise they are read in one query."""
    if transfers is None:
        transfers = transfers_of(session, [p.id for p in payments])
    # the refunds of those that may have some, in one query
    totals = refund_totals(session, [p.id for p in payments if may_have_refunds(transfers.get(p.id, []))])
    timestamp = iso(now)
    return outbox.record_many(
        session,
        (
            _row(p, event_type, now, transfers.get(p.id, []), timestamp=timestamp, refunds=totals.get(p.id, NONE))
            for p in payments
        ),
    )
