"""Domain events and the outbox they are written to.

An event row is written in the same transaction as the change it describes; the relay
(kassa_common.outbox) publishes it after commit. The payload is the webhook body,
fixed at the moment of the change.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.ids import new_event_id
from kassa_common.models import Event, Payment
from kassa_common.serializers import payment_to_dict
from kassa_common.timefmt import iso, utcnow

PAYMENT_EVENTS = (
    "payment.created",
    "payment.detected",
    "payment.partially_paid",
    "payment.completed",
    "payment.expired",
    "payment.canceled",
    "payment.late_payment",
)
ALL_EVENTS = PAYMENT_EVENTS  # webhook.test is sent on demand, never subscribed to


def envelope(event_id: str, event_type: str, test_mode: bool, data: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {"id": event_id, "event": event_type, "timestamp": iso(at), "test_mode": test_mode, "data": data}


def _payment_event_row(payment: Payment, event_type: str, now: datetime) -> dict[str, Any]:
    event_id = new_event_id()
    data = {"payment_id": str(payment.id), **payment_to_dict(payment)}
    return {"id": event_id, "type": event_type, "merchant_id": payment.merchant_id, "test_mode": payment.test_mode,
            "payment_id": payment.id, "payload": envelope(event_id, event_type, payment.test_mode, data, now),
            "created_at": now}


def record_payment_event(session: Session, payment: Payment, event_type: str, *, now: datetime | None = None) -> Event:
    row = Event(**_payment_event_row(payment, event_type, now or utcnow()))
    session.add(row)
    return row


def record_payment_events(session: Session, payments: list[Payment], event_type: str, *, now: datetime) -> None:
    """The same event for many payments, in one multi-row insert."""
    session.execute(sa.insert(Event), [_payment_event_row(p, event_type, now) for p in payments])


def record_message(session: Session, *, merchant_id, test_mode: bool, payment_id, routing_key: str,
                   body: dict[str, Any], now: datetime | None = None) -> Event:
    """An internal message (not a webhook event) sent through the outbox, e.g. a simulated transfer."""
    row = Event(id=new_event_id(), type=routing_key, merchant_id=merchant_id, test_mode=test_mode,
                payment_id=payment_id, payload=body, created_at=now or utcnow())
    session.add(row)
    return row
