"""Intake: turn an event from the bus into one PENDING delivery per subscribed endpoint.

Runs inside the consumer's transaction (which also records the message id), so a
redelivered message creates nothing; the unique (event_id, endpoint_id) makes a second
intake of the same event, by whatever path, create nothing either. The ids of the new
deliveries are returned so that, after commit, they are handed to the dispatcher.
"""
from __future__ import annotations

import logging
import uuid

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.bus.consumer import Delivered, Reject
from kassa_common.messages import DeliveryStatus, PaymentEvent

log = logging.getLogger("kassa.webhooks")

CREATE_DELIVERIES = sa.text("""
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at)
    SELECT gen_random_uuid(), w.id, e.id, e.type, :pending, 0, now()
    FROM events e
    JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id AND w.test_mode = e.test_mode
    WHERE e.id = :event_id AND w.active AND w.deleted_at IS NULL AND e.type = ANY(w.events)
    ON CONFLICT (event_id, endpoint_id) DO NOTHING
    RETURNING id
""")


def create_deliveries(session: Session, event_id: str) -> list[uuid.UUID]:
    """Deliveries of this event to every matching endpoint; the ids of the new ones."""
    return list(session.scalars(CREATE_DELIVERIES, {"event_id": event_id, "pending": DeliveryStatus.PENDING}))


def handle_event(session: Session, msg: Delivered) -> list[uuid.UUID] | None:
    """Consumer handler: the new delivery ids (None when there is nothing to hand off)."""
    try:
        event = PaymentEvent.from_message(msg.routing_key, msg.body)
    except (KeyError, ValueError, TypeError) as exc:
        raise Reject(f"not a payment event: {exc!r}") from None
    ids = create_deliveries(session, event.id)
    if not ids:
        log.debug("event %s (%s): no subscribed endpoint", event.id, event.event)
        return None
    return ids
