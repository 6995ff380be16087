"""The outbox: messages written in the transaction of the change they describe.

A row of ``events`` is written in the same transaction as the change it reports; the relay
(``kassa_common.outbox``) publishes it after commit. Payment events (``payments.events``)
are the webhook bodies, fixed at the moment of the change; internal messages, such as a
simulated transfer in test mode, travel the same way.
"""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.bus.publisher import Message
from kassa_common.models import Event
from kassa_common.timefmt import utcnow


def outbox_row(message: Message, *, merchant_id: uuid.UUID, test_mode: bool, payment_id: uuid.UUID | None,
               now: datetime, published: bool = False) -> dict[str, Any]:
    return {"id": message.message_id, "type": message.routing_key, "merchant_id": merchant_id,
            "test_mode": test_mode, "payment_id": payment_id, "payload": message.body, "created_at": now,
            "published_at": now if published else None}


def record(session: Session, message: Message, *, merchant_id: uuid.UUID, test_mode: bool,
           payment_id: uuid.UUID | None = None, now: datetime | None = None, published: bool = False) -> Event:
    """Write one message to the outbox. ``published``: never relayed (a webhook test, sent
    to one endpoint by the webhook sender only)."""
    row = Event(**outbox_row(message, merchant_id=merchant_id, test_mode=test_mode, payment_id=payment_id,
                             now=now or utcnow(), published=published))
    session.add(row)
    return row


def record_many(session: Session, rows: list[dict[str, Any]]) -> None:
    """Many ``outbox_row``s in one multi-row insert."""
    if rows:
        session.execute(sa.insert(Event), rows)
