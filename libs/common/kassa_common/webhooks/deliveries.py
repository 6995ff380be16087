"""Webhook deliveries as the merchant sees them: the log, redeliver, and test events.

Redeliver and test only write rows (a delivery PENDING and due now); the webhook
sender's dispatcher picks them up at its next poll.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import sqlalchemy as sa
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound, Unprocessable
from kassa_common.fields import ListPage
from kassa_common.ids import new_event_id, parse_uuid
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_common.models import DeliveryAttempt, WebhookDelivery, WebhookEndpoint
from kassa_common.owner import Owner, owned
from kassa_common.paging import page_of
from kassa_common.statuses import DeliveryStatus
from kassa_common.timefmt import iso, utcnow

TEST_EVENT = EventType.WEBHOOK_TEST
TEST_MESSAGE = "A test event from Kassa: your endpoint received and can verify this webhook."


class EndpointDisabled(Unprocessable):
    pass


def _endpoint(session: Session, owner: Owner, ref: str, *, lock=False):
    return owned(session, WebhookEndpoint, ref, owner, what="webhook", lock=lock)


def require_active(hook: WebhookEndpoint) -> None:
    if not hook.active:
        raise EndpointDisabled("this webhook endpoint is disabled; set active to true first")


class Health(NamedTuple):
    """How an endpoint is doing: its latest success, the failed attempts since, and since when
    every attempt has failed (None: the latest answered 2xx, or nothing was sent yet)."""

    last_success_at: datetime | None
    failures_since_success: int
    failing_since: datetime | None

    @property
    def failing(self) -> bool:
        return self.failures_since_success > 0


def endpoint_health(session: Session, endpoint_id: uuid.UUID) -> Health:
    attempts = (
        sa.select(DeliveryAttempt.created_at, DeliveryAttempt.status_code)
        .join(WebhookDelivery, WebhookDelivery.id == DeliveryAttempt.delivery_id)
        .where(WebhookDelivery.endpoint_id == endpoint_id)
        .subquery()
    )
    ok = attempts.c.status_code.between(200, 299)
    last_success = session.scalar(sa.select(sa.func.max(attempts.c.created_at)).where(ok))
    since = attempts.c.created_at > last_success if last_success is not None else sa.true()
    failures, first_failure = session.execute(
        sa.select(sa.func.count(), sa.func.min(attempts.c.created_at)).where(
            since, sa.not_(ok) | attempts.c.status_code.is_(None)
        )
    ).one()
    return Health(last_success, failures, first_failure if failures else None)


def list_deliveries(
    session: Session, owner: Owner, ref: str, page: int, page_size: int, status: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """A page of the endpoint's deliveries, newest first, each with its attempts."""
    hook = _endpoint(session, owner, ref)
    conds = [WebhookDelivery.endpoint_id == hook.id]
    if status is not None:
        conds.append(WebhookDelivery.status == status)
    rows, total = page_of(session, WebhookDelivery, conds, page, page_size)
    log = _attempts(session, [d.id for d in rows])
    return [delivery_view(d, log[d.id]) for d in rows], total


def get_delivery(
    session: Session, owner: Owner, ref: str, delivery_ref: str, *, lock: bool = False
) -> tuple[WebhookEndpoint, WebhookDelivery]:
    hook = _endpoint(session, owner, ref)
    did = parse_uuid(delivery_ref)
    found = session.get(WebhookDelivery, did, with_for_update=lock) if did else None
    if found is None or found.endpoint_id != hook.id:
        raise NotFound("delivery not found")
    return hook, found


def redeliver(session: Session, owner: Owner, ref: str, delivery_ref: str) -> WebhookDelivery:
    """Send the delivery again now, whatever its status (same event id, new attempt).

    An attempt in flight (the row leased) loses its lease: the redeliver wins. The row is due
    at once, so a sender claims it and sends it again while or after the first request ends,
    and that first attempt's outcome is not recorded (the sender's recorder writes only
    while the row carries its own lease), so it never overwrites the redeliver."""
    hook, found = get_delivery(session, owner, ref, delivery_ref, lock=True)
    require_active(hook)
    found.status, found.next_attempt_at, found.updated_at = DeliveryStatus.PENDING, utcnow(), utcnow()
    found.lease_until = None
    return found


def send_test(session: Session, owner: Owner, ref: str) -> WebhookDelivery:
    """A ``webhook.test`` event for this endpoint only, due now (never published on the bus)."""
    hook = _endpoint(session, owner, ref)
    require_active(hook)
    now, event_id = utcnow(), new_event_id()
    data = {"webhook_id": str(hook.id), "message": TEST_MESSAGE}
    event = EventEnvelope(event_id, TEST_EVENT, iso(now), owner.test_mode, data)
    outbox.record(
        session, event.to_message(), merchant_id=owner.merchant_id, test_mode=owner.test_mode, now=now, published=True
    )  # the outbox relay leaves it alone: sent to this endpoint only
    found = WebhookDelivery(
        id=uuid.uuid4(),
        endpoint_id=hook.id,
        event_id=event_id,
        event_type=TEST_EVENT,
        status=DeliveryStatus.PENDING,
        attempts=0,
        next_attempt_at=now,
        created_at=now,
        updated_at=now,
    )
    session.add(found)
    session.flush()
    return found


def _attempts(session: Session, delivery_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[dict[str, Any]]]:
    out: dict[uuid.UUID, list[dict[str, Any]]] = defaultdict(list)
    if not delivery_ids:
        return out
    rows = session.scalars(
        sa.select(DeliveryAttempt)
        .where(DeliveryAttempt.delivery_id.in_(delivery_ids))
        .order_by(DeliveryAttempt.delivery_id, DeliveryAttempt.attempt, DeliveryAttempt.created_at)
    )
    for a in rows:
        out[a.delivery_id].append(
            {
                "attempt": a.attempt,
                "status_code": a.status_code,
                "duration_ms": a.duration_ms,
                "error": a.error,
                "next_retry_at": iso(a.next_retry_at),
                "created_at": iso(a.created_at),
            }
        )
    return out


def delivery_view(d: WebhookDelivery, attempts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": str(d.id),
        "webhook_id": str(d.endpoint_id),
        "event_id": d.event_id,
        "event": d.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "last_status_code": d.last_status_code,
        "last_error": d.last_error,
        "next_attempt_at": iso(d.next_attempt_at) if d.status == DeliveryStatus.PENDING else None,
        "created_at": iso(d.created_at),
        "updated_at": iso(d.updated_at),
        "attempts_log": attempts,
    }


def delivery_with_log(session: Session, d: WebhookDelivery) -> dict[str, Any]:
    return delivery_view(d, _attempts(session, [d.id])[d.id])


def event_deliveries(session: Session, event_id: str) -> list[tuple[WebhookDelivery, str]]:
    """Where an event went: its deliveries, oldest first, each with its endpoint's URL."""
    rows = session.execute(
        sa.select(WebhookDelivery, WebhookEndpoint.url)
        .join(WebhookEndpoint)
        .where(WebhookDelivery.event_id == event_id)
        .order_by(WebhookDelivery.created_at)
    )
    return [row._tuple() for row in rows]


# ---- API shape -------------------------------------------------------------------------

if TYPE_CHECKING:
    DeliveryStatusName = str
else:  # the statuses, as a Literal for the OpenAPI document
    DeliveryStatusName = Literal[tuple(s.value for s in DeliveryStatus)]


class ListDeliveries(ListPage):
    status: DeliveryStatusName | None = Field(None, description="only deliveries in this status")


class AttemptOut(BaseModel):
    attempt: int
    status_code: int | None = Field(description="HTTP status, null when no response came")
    duration_ms: int
    error: str | None
    next_retry_at: str | None = Field(description="when the next attempt is due; null after the last")
    created_at: str


class DeliveryOut(BaseModel):
    id: str
    webhook_id: str
    event_id: str
    event: str = Field(description="event type, e.g. payment.completed or webhook.test")
    status: DeliveryStatusName
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: str | None
    created_at: str
    updated_at: str
    attempts_log: list[AttemptOut]
