"""/events: every payment event of the last 30 days, as its webhooks carried it."""

from __future__ import annotations

from flask import Blueprint

from kassa_common import events
from kassa_common.events import EventOut, EventPage, ListEvents
from kassa_common.paging import page_meta
from kassa_api.auth import owner
from kassa_api.deps import db
from kassa_api.endpoint import endpoint

bp = Blueprint("events", __name__)
SCOPE = "payments:read"


@bp.get("/events")
@endpoint(
    "List events of the last 30 days, newest first", scope=SCOPE, tag="events", query=ListEvents, response=EventPage
)
def list_events(query: ListEvents):
    rows, total = events.list_events(
        db(),
        owner(),
        query.page,
        query.pageSize,
        type=query.type,
        payment_id=query.payment_id,
        created_gte=query.created_gte,
        created_lte=query.created_lte,
    )
    return {"data": rows, "meta": page_meta(query.page, query.pageSize, total)}


@bp.get("/events/<event_id>")
@endpoint("Get an event by id", scope=SCOPE, tag="events", response=EventOut, errors=(404,))
def get_event(event_id: str):
    return events.body_of(events.find_event(db(), owner(), event_id).payload)
