"""Payments: the list (status filter, search, pages) and its CSV export, one payment's history, and cancel."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import NamedTuple

from flask import Blueprint, Response, abort, redirect, url_for
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import payments
from kassa_common.errors import DomainError
from kassa_common.owner import Owner
from kassa_common.paging import page_meta
from kassa_common.timefmt import utcnow
from kassa_api import query
from kassa_api.actors import dashboard_actor
from kassa_api.deps import read_db, read_sessions, transaction
from kassa_api.routes.dashboard.common import (
    NO_PAYMENT,
    current_owner,
    get_payment_or_404,
    login_required,
    not_found_as_404,
    render,
)
from kassa_api.routes.dashboard.payment_page import detail_page

bp = Blueprint("payments", __name__)
PAGE_SIZE = 20


class ListFilters(NamedTuple):
    """The list's filters from the query string, which its CSV export follows."""

    status: str | None  # a known status, else any
    search: str | None
    since: date | None  # created from this UTC day ...
    until: date | None  # ... through this one (both included)

    def args(self) -> dict[str, str]:
        """The filters as query parameters (for the export link and the pager)."""
        values = {"status": self.status, "search": self.search, "from": self.since, "to": self.until}
        return {k: str(v) for k, v in values.items() if v}


def list_filters() -> ListFilters:
    since, until = query.day("from", "from"), query.day("to", "to")
    if since and until and since > until:
        abort(400, description="The from date must be on or before the to date.")
    return ListFilters(query.choice("status", payments.STATUSES), query.text("search"), since, until)


@bp.get("/payments")
@login_required
def index():
    filters = list_filters()
    page_no = query.page_number()
    rows, total = payments.list_payments(
        read_db(), current_owner(), page=page_no, page_size=PAGE_SIZE, **filters._asdict()
    )
    return render(
        "payments.html",
        rows=rows,
        total=total,
        page=page_no,
        pages=page_meta(page_no, PAGE_SIZE, total)["pages"],
        status=filters.status,
        search=filters.search or "",
        since=filters.since,
        until=filters.until,
        filter_args=filters.args(),
        statuses=payments.STATUSES,
    )


@bp.get("/payments/export.csv")
@login_required
def export():
    """The list with its filters as a CSV download, streamed as it is read (``payments.export``)."""
    filters = list_filters()
    owner = current_owner()
    filename = f"kassa-payments-{owner.mode}-{utcnow():%Y-%m-%d}.csv"
    return Response(
        _csv(read_sessions(), owner, filters),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


def _csv(sessions: sessionmaker[Session], owner: Owner, filters: ListFilters) -> Iterator[str]:
    """The body, on a session of its own: the request's session is closed as soon as the view
    returns, before the server reads the body; this one closes when the body ends or the
    client goes away (the server closes the generator)."""
    with sessions() as session:
        yield from payments.payments_csv(session, owner, **filters._asdict())


@bp.get("/payments/<ref>")
@login_required
def detail(ref: str):
    return detail_page(get_payment_or_404(ref), refund_error=query.text("refund_error"))


@bp.post("/payments/<ref>/cancel")
@login_required
def cancel(ref: str):
    try:
        with not_found_as_404(NO_PAYMENT), transaction() as s:
            payment = payments.cancel_payment(s, current_owner(), ref, actor=dashboard_actor())
    except DomainError as exc:
        abort(409, description=exc.message)
    return redirect(url_for("dashboard.payments.detail", ref=payment.short_id), 303)
