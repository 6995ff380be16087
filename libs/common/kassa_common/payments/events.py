"""Payment events: the webhook body of each transition, written to the outbox with it."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from kassa_common import events as outbox
from kassa_common.ids import new_event_id
from kassa_common.messages import EventType, PaymentEvent
from kassa_common.models import Event, Payment
from kassa_common.payments.shape import payment_to_dict, transfers_of
from kassa_common.timefmt import iso, utcnow


def payment_event(payment: Payment, event_type: EventType, now: datetime,
                  transfers: list | None = None) -> PaymentEvent:
    data = {"payment_id": str(payment.id), **payment_to_dict(payment, transfers)}
    return PaymentEvent(new_event_id(), event_type, iso(now), payment.test_mode, data)


def _row(payment: Payment, event_type: EventType, now: datetime, transfers: list | None = None) -> dict:
    return outbox.outbox_row(payment_event(payment, event_type, now, transfers).to_message(),
                             merchant_id=payment.merchant_id, test_mode=payment.test_mode, payment_id=payment.id,
                             now=now)


def record_payment_event(session: Session, payment: Payment, event_type: EventType, *,
                         now: datetime | None = None, transfers: list | None = None) -> Event:
    """``transfers``: the payment's (``shape.transfers_of``) when known, ``[]`` for a new one."""
    row = Event(**_row(payment, event_type, now or utcnow(), transfers))
    session.add(row)
    return row


def record_payment_events(session: Session, payments: list[Payment], event_type: EventType, *,
                          now: datetime) -> None:
    """The same event for many payments, in one multi-row insert."""
    transfers = transfers_of(session, [p.id for p in payments])
    outbox.record_many(session, [_row(p, event_type, now, transfers.get(p.id, [])) for p in payments])
