"""The overview, where a merchant lands after logging in: the last 30 days' completed volume
as a bar chart, how many payments are in each status, and the latest payments.

Everything is for the mode the dashboard is switched to. The numbers are summed by
PostgreSQL (``queries``); the chart is SVG laid out on the server (``kassa_api.chart``),
so the page runs no script.
"""
from __future__ import annotations

from flask import Blueprint

from kassa_api.chart import bar_chart
from kassa_api.deps import db
from kassa_api.routes.dashboard.common import current_owner, login_required, render
from kassa_common import payments
from kassa_common.payments import reports
from kassa_common.timefmt import utcnow

bp = Blueprint("overview", __name__)
DAYS = 30
RECENT = 10


@bp.get("/overview")
@login_required
def index():
    owner = current_owner()
    days = reports.daily_volume(db(), owner.merchant_id, owner.test_mode, utcnow().date(), DAYS)
    counts = reports.status_counts(db(), owner.merchant_id, owner.test_mode)
    recent, _ = payments.list_payments(db(), owner, page=1, page_size=RECENT, status=None, search=None)
    return render("overview.html", days=days, chart=bar_chart(days), total=sum(d.amount for d in days),
                  count=sum(d.count for d in days), counts=counts, recent=recent)
