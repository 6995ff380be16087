"""The open store's audit log (DESIGN §14), for its owners: who changed money or access,
what, which object, from where and when, newest first (pages, a filter by action), and the
same rows as a CSV download. The rows are written by the changes themselves
(``kassa_common.audit``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from flask import Blueprint, Response, g
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import audit
from kassa_common.paging import page_meta
from kassa_common.timefmt import utcnow
from kassa_api import query
from kassa_api.deps import read_db, read_sessions
from kassa_api.routes.dashboard.common import login_required, render

bp = Blueprint("audit", __name__)
PAGE_SIZE = 50


@bp.get("/audit")
@login_required
def index():
    action = query.choice("action", audit.ACTIONS)
    page_no = query.page_number()
    rows, total = audit.page(read_db(), g.merchant.id, page_no, PAGE_SIZE, action)
    return render(
        "audit.html",
        rows=rows,
        total=total,
        page=page_no,
        pages=page_meta(page_no, PAGE_SIZE, total)["pages"],
        action=action,
        actions=audit.ACTIONS,
    )


@bp.get("/audit.csv")
@login_required
def export():
    """Every row (with the page's action filter) as CSV, streamed as it is read."""
    action = query.choice("action", audit.ACTIONS)
    filename = f"kassa-audit-{utcnow():%Y-%m-%d}.csv"
    return Response(
        _csv(read_sessions(), g.merchant.id, action),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


def _csv(sessions: sessionmaker[Session], store_id: uuid.UUID, action: str | None) -> Iterator[str]:
    """On a session of its own: the request's is closed before the server reads the body."""
    with sessions() as session:
        yield from audit.csv_chunks(session, store_id, action)
