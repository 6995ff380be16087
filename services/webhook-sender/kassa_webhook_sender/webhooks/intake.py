"""Intake: turn an event from the bus into one PENDING delivery per subscribed endpoint.

Runs inside the consumer's transaction (which also records the message id), so a
redelivered message creates nothing; the unique (event_id, endpoint_id) makes a second
intake of the same event, by whatever path, create nothing either. The ids of the new
deliveries are returned so that, after commit, they are handed to the dispatcher.

The consumer hands over the messages that arrived together one by one in ONE
transaction. One INSERT per message cost more than everything else the sender does for a
delivery (~0.4 ms of CPU, most of it SQLAlchemy's per-statement work), so ``handle_event``
only notes the event on the session and returns the list its delivery ids will go into;
the deliveries of every event noted are written by one INSERT just before the transaction
commits (a ``before_commit`` hook on that session). Whoever commits the transaction sees
the lists filled; if anything fails, the transaction rolls back with nothing written.
"""

from __future__ import annotations

import logging
import uuid

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.messaging.consumer import Delivered, Reject
from kassa_common.messaging.messages import EventEnvelope
from kassa_common.statuses import DeliveryStatus

log = logging.getLogger("kassa.webhooks")

# Ordered by event and endpoint: two transactions inserting the same pairs (an event
# published twice) wait for each other in the same order instead of deadlocking.
CREATE_DELIVERIES = sa.text("""
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at)
    SELECT gen_random_uuid(), w.id, e.id, e.type, :pending, 0, now()
    FROM events e
    JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id AND w.test_mode = e.test_mode
    WHERE e.id = ANY(:event_ids) AND w.active AND w.deleted_at IS NULL AND e.type = ANY(w.events)
    ORDER BY e.id, w.id
    ON CONFLICT (event_id, endpoint_id) DO NOTHING
    RETURNING id, event_id
""")
PENDING = "kassa_webhook_intake"  # session.info key: {event id: the list its delivery ids go into}


def create_deliveries(session: Session, event_ids: list[str]) -> dict[str, list[uuid.UUID]]:
    """Deliveries of these events to every matching endpoint; the new ones' ids by event."""
    created: dict[str, list[uuid.UUID]] = {}
    rows = session.execute(CREATE_DELIVERIES, {"event_ids": event_ids, "pending": DeliveryStatus.PENDING})
    for delivery_id, event_id in rows:
        created.setdefault(event_id, []).append(delivery_id)
    return created


def handle_event(session: Session, msg: Delivered) -> list[uuid.UUID]:
    """Consumer handler: the list that holds the event's new delivery ids once the
    transaction commits (empty when no endpoint wants it or it was taken in before)."""
    try:
        event = EventEnvelope.from_message(msg.routing_key, msg.body)
    except (KeyError, ValueError, TypeError) as exc:
        raise Reject(f"not a payment event: {exc!r}") from None
    pending = session.info.get(PENDING)
    if pending is None:
        pending = session.info[PENDING] = {}
        sa.event.listen(session, "before_commit", _create_pending, once=True)
    if event.id in pending:
        return []  # the same event twice in one transaction: its deliveries go to the first
    ids: list[uuid.UUID] = []
    pending[event.id] = ids
    return ids


def _create_pending(session: Session) -> None:
    pending = session.info.pop(PENDING, {})
    if not pending:
        return
    created = create_deliveries(session, list(pending))
    for event_id, ids in pending.items():
        ids.extend(created.get(event_id, ()))
        if not ids:
            log.debug("event %s: no new delivery (no subscribed endpoint, or taken in before)", event_id)
