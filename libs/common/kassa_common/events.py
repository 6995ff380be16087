"""Events as the merchant reads them (DESIGN.md §3 "Events"): every payment event of the
last 30 days, per merchant and mode, exactly as its webhooks carry it; and a resend of
one to a chosen endpoint (the dashboard's events log), through the redeliver path.

A refund's claim link never leaves through an event (DESIGN §8): events are written without
it, and one stored before that rule is shown and sent without it too (``body_of``).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, Field
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.fields import EventName, ListPage, PageMeta, QueryTime
from kassa_common.models import Event, WebhookDelivery, WebhookEndpoint
from kassa_common.owner import Owner, owned
from kassa_common.paging import page_of
from kassa_common.refunds.shape import without_claim_link
from kassa_common.statuses import DeliveryStatus
from kassa_common.timefmt import utcnow
from kassa_common.webhooks import deliveries

RETENTION = timedelta(days=30)


def _utc(moment: datetime) -> datetime:
    """The moment in UTC (no offset given: already UTC). Any offset the document allows is
    accepted; one that moves the moment past datetime's range clamps to the range's end."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        edge = datetime.min if moment.year == datetime.min.year else datetime.max
        return edge.replace(tzinfo=UTC)


def _visible(owner: Owner) -> list:
    """The owner's payment and refund events still readable (internal bus messages are not events)."""
    return [
        Event.merchant_id == owner.merchant_id,
        Event.test_mode == owner.test_mode,
        sa.or_(Event.type.like("payment.%"), Event.type.like("refund.%")),
        Event.created_at >= utcnow() - RETENTION,
    ]


def body_of(payload: dict[str, Any]) -> dict[str, Any]:
    """An event's body as the API, the dashboard and webhooks show it: the stored payload, a
    refund's ``claim_url`` left out (an event stored before events lost it still has one)."""
    data = payload.get("data")
    if not isinstance(data, dict) or "claim_url" not in data:
        return payload
    return {**payload, "data": without_claim_link(data)}


def list_events(
    session: Session,
    owner: Owner,
    page: int,
    page_size: int,
    *,
    type: str | None = None,
    payment_id: uuid.UUID | None = None,
    created_gte: QueryTime | None = None,
    created_lte: QueryTime | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """A page of events, newest first, each as its webhook body."""
    conds = _visible(owner)
    if type is not None:
        conds.append(Event.type == type)
    if payment_id is not None:
        conds.append(Event.payment_id == payment_id)
    if created_gte is not None:
        conds.append(Event.created_at >= _utc(created_gte))
    if created_lte is not None:
        conds.append(Event.created_at <= _utc(created_lte))
    rows, total = page_of(session, Event, conds, page, page_size)
    return [body_of(e.payload) for e in rows], total


def find_event(session: Session, owner: Owner, event_id: str) -> Event:
    """The owner's event, or NotFound (never confirm another merchant's or mode's exists)."""
    found = session.scalars(sa.select(Event).where(Event.id == event_id, *_visible(owner))).first()
    if found is None:
        raise NotFound("event not found")
    return found


def resend(session: Session, owner: Owner, event_id: str, webhook_ref: str) -> WebhookDelivery:
    """Send the event to this endpoint now: its delivery there (made if the endpoint never
    had one, say it subscribes to other events) goes through ``deliveries.redeliver``."""
    event = find_event(session, owner, event_id)
    hook = owned(session, WebhookEndpoint, webhook_ref, owner, what="webhook")
    deliveries.require_active(hook)
    now = utcnow()
    session.execute(
        pg_insert(WebhookDelivery)
        .values(
            id=uuid.uuid4(),
            endpoint_id=hook.id,
            event_id=event.id,
            event_type=event.type,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["event_id", "endpoint_id"])
    )
    delivery_id = session.scalar(
        sa.select(WebhookDelivery.id).where(
            WebhookDelivery.event_id == event.id, WebhookDelivery.endpoint_id == hook.id
        )
    )
    return deliveries.redeliver(session, owner, str(hook.id), str(delivery_id))


# ---- API shape -------------------------------------------------------------------------


class ListEvents(ListPage):
    type: EventName | None = Field(None, description="only events of this type")
    payment_id: uuid.UUID | None = Field(None, description="only events of this payment (its UUID)")
    created_gte: QueryTime | None = Field(None, description="created at or after (ISO 8601; UTC if no offset)")
    created_lte: QueryTime | None = Field(None, description="created at or before (ISO 8601; UTC if no offset)")


class EventOut(BaseModel):
    """An event exactly as its webhook carried it."""

    id: str = Field(description="evt_…; the X-Kassa-Event-Id of its webhooks")
    event: EventName
    timestamp: str
    test_mode: bool
    data: dict[str, Any] = Field(
        description="the payment object at the time of the event, with payment_id; for refund.* events the refund "
        "object with refund_id and payment_id, without its claim_url (claimable says whether it awaits an address)"
    )


class EventPage(BaseModel):
    data: list[EventOut]
    meta: PageMeta
