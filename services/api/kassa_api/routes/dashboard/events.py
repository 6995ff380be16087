"""The events log: every payment event of the last 30 days (type filter, pages), one event's
body and where it was delivered, and "resend to endpoint" (a delivery of that event to a
chosen webhook endpoint, through the redeliver path)."""

from __future__ import annotations

from flask import Blueprint, redirect, request, url_for

from kassa_common import events
from kassa_common.errors import DomainError
from kassa_common.messaging.messages import WEBHOOK_EVENTS
from kassa_common.paging import page_meta
from kassa_common.webhooks.deliveries import event_deliveries
from kassa_common.webhooks.endpoints import active_endpoints
from kassa_api import query
from kassa_api.deps import db, transaction
from kassa_api.routes.dashboard.common import current_owner, login_required, not_found_as_404, render

bp = Blueprint("events", __name__)
PAGE_SIZE = 25
NO_EVENT = "No such event in this mode (events are kept 30 days)."


@bp.get("/events")
@login_required
def index():
    kind = query.choice("type", WEBHOOK_EVENTS)
    page_no = query.page_number()
    rows, total = events.list_events(db(), current_owner(), page_no, PAGE_SIZE, type=kind)
    return render(
        "events.html",
        rows=rows,
        total=total,
        page=page_no,
        type=kind,
        types=WEBHOOK_EVENTS,
        pages=page_meta(page_no, PAGE_SIZE, total)["pages"],
    )


def _page(event_id: str, status: int = 200, /, **context):
    owner = current_owner()
    with not_found_as_404(NO_EVENT):
        event = events.find_event(db(), owner, event_id)
    return render(
        "event.html",
        status,
        event=event,
        body=events.body_of(event.payload),
        deliveries=event_deliveries(db(), event.id),
        endpoints=active_endpoints(db(), owner.merchant_id, owner.test_mode),
        **context,
    )


@bp.get("/events/<event_id>")
@login_required
def detail(event_id: str):
    return _page(event_id)


@bp.post("/events/<event_id>/resend")
@login_required
def resend(event_id: str):
    owner = current_owner()
    with not_found_as_404(NO_EVENT):
        events.find_event(db(), owner, event_id)
    try:
        with transaction() as s:
            events.resend(s, owner, event_id, request.form.get("webhook_id", ""))
    except DomainError as exc:  # the endpoint is gone or disabled
        return _page(event_id, 422, error=exc.message)
    return redirect(url_for("dashboard.events.detail", event_id=event_id, resent=1), 303)
