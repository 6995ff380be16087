"""The overview, where a merchant lands after logging in: the last 30 days' completed volume
as a bar chart (per currency: the most used one, the others a link away), how many payments
are in each status, the latest payments, and a warning while a stablecoin is off its peg
(the rate service prices it at market then: ``kassa_common.pricing.service``).

Everything is for the mode the dashboard is switched to. The numbers are summed by
PostgreSQL (``queries``), on ``DATABASE_READ_URL`` when it names a replica; the chart is
SVG laid out on the server (``kassa_api.chart``), so the page runs no script.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from flask import Blueprint, request

from kassa_common import payments
from kassa_common.payments import reports
from kassa_common.pricing import currencies
from kassa_common.timefmt import utcnow
from kassa_api.chart import bar_chart
from kassa_api.deps import deps, read_db
from kassa_api.routes.dashboard.common import current_owner, login_required, render

bp = Blueprint("overview", __name__)
DAYS = 30
RECENT = 10


@bp.get("/overview")
@login_required
def index():
    owner = current_owner()
    today = utcnow().date()
    since = datetime.combine(today - timedelta(days=DAYS - 1), time(), UTC)
    used = reports.volume_currencies(read_db(), owner.merchant_id, owner.test_mode, since)
    asked = request.args.get("currency", "")[:3].upper()
    currency = asked if asked in used else (used[0] if used else "USD")
    days = reports.daily_volume(read_db(), owner.merchant_id, owner.test_mode, today, DAYS, currency)
    counts = reports.status_counts(read_db(), owner.merchant_id, owner.test_mode)
    recent, _ = payments.list_payments(read_db(), owner, page=1, page_size=RECENT, status=None, search=None)
    return render(
        "overview.html",
        days=days,
        chart=bar_chart(days, currencies.SYMBOLS.get(currency, f"{currency} ")),
        total=sum(d.amount for d in days),
        count=sum(d.count for d in days),
        counts=counts,
        recent=recent,
        currency=currency,
        currencies=used,
        depegs=deps().rates.depegs(),
    )
