"""The dashboard overview on real PostgreSQL: the 30 days' completed volume per UTC day (zero
days included; other merchants, the other mode and older payments left out), the counts
per status, the latest payments, and login landing there."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.models import Payment
from kassa_common.payments import reports
from tests.support.api import API
from tests.support.dashboard import csrf_of
from tests.support.shop import TODAY, at, shop  # noqa: F401  (fixture)


def pay(client, key: str, amount: str, network: str = "BASE") -> dict:
    r = client.post(
        f"{API}/payments",
        json={"amount": float(amount), "token": "USDC", "network": network},
        headers={"X-Api-Key": key},
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def set_status(sessions, payment: dict, status: str, completed_at: datetime | None = None) -> None:
    with sessions.begin() as s:
        s.execute(
            sa.update(Payment)
            .where(Payment.id == uuid.UUID(payment["id"]))
            .values(status=status, completed_at=completed_at)
        )


@pytest.fixture
def month(shop, sessions, make_merchant):
    """Test-mode payments of ``shop`` completed across the window's edges, in other statuses,
    and the payments the overview must leave out (live mode, another merchant, too old)."""
    test, live = shop.keys["test"], shop.keys["live"]
    completed = [
        ("10.00", at(TODAY)),
        ("2.50", at(TODAY, 0, 0, 1)),
        ("4.00", at(TODAY - timedelta(days=3), 23, 59, 59)),
        ("6.00", at(TODAY - timedelta(days=2))),
        ("7.00", at(TODAY - timedelta(days=29))),  # the window's first day
        ("1000.00", at(TODAY - timedelta(days=30), 23, 59, 59)),
    ]  # the day before it
    made = []
    for amount, when in completed:
        made.append(pay(shop, test, amount))
        set_status(sessions, made[-1], "COMPLETED", when)
    for status in ("PENDING", "PARTIALLY_PAID", "EXPIRED", "CANCELED", "PENDING", "PENDING"):
        made.append(pay(shop, test, "1.00"))
        set_status(sessions, made[-1], status)
    set_status(sessions, pay(shop, live, "500.00", "LOCAL_EVM"), "COMPLETED", at(TODAY))
    pay(shop, live, "3.00", "LOCAL_EVM")
    other = make_merchant()
    set_status(sessions, pay(shop, other.test_key, "300.00"), "COMPLETED", at(TODAY))
    return made


def test_daily_volume_sums_completed_payments_per_utc_day_in_one_query(shop, month, sessions):
    with sessions() as s:
        s.execute(sa.text("SET TIME ZONE 'Asia/Tokyo'"))  # the session's zone must not move a day
        days = reports.daily_volume(s, shop.merchant_id, True, TODAY)
    assert [d.day for d in days] == [TODAY - timedelta(days=29 - i) for i in range(30)]
    expected = {
        TODAY: (Decimal("12.50"), 2),
        TODAY - timedelta(days=2): (Decimal("6.00"), 1),
        TODAY - timedelta(days=3): (Decimal("4.00"), 1),
        TODAY - timedelta(days=29): (Decimal("7.00"), 1),
    }
    assert {d.day: (d.amount, d.count) for d in days if d.count} == expected
    assert all(d.amount == 0 for d in days if d.day not in expected)
    with sessions() as s:
        live = reports.daily_volume(s, shop.merchant_id, False, TODAY)
        assert [(d.amount, d.count) for d in live if d.count] == [(Decimal("500.00"), 1)]
        assert reports.status_counts(s, shop.merchant_id, True) == {
            "PENDING": 3,
            "COMPLETED": 6,
            "PARTIALLY_PAID": 1,
            "EXPIRED": 1,
            "CANCELED": 1,
        }


def test_login_lands_on_the_overview(shop):
    assert shop.landing.status_code == 303
    home = shop.get(shop.landing.headers["Location"])
    assert home.status_code == 303 and home.headers["Location"].endswith("/dashboard/overview")
    assert 'href="/dashboard/overview">Overview</a>' in shop.get("/dashboard/overview").get_data(as_text=True)


def test_the_overview_shows_the_mode_s_volume_chart_counts_and_latest_payments(shop, month):
    page = shop.get("/dashboard/overview").get_data(as_text=True)
    assert re.search(r'id="volume-total">\$29\.50<', page) and "from 5 payments" in page
    assert page.count('class="chart-bar"') == 30 and 'viewBox="0 0 360 180" width="100%"' in page
    assert f"<title>{TODAY.isoformat()}: $12.50 (2 payments)</title>" in page
    assert f"<title>{(TODAY - timedelta(days=1)).isoformat()}: $0.00 (0 payments)</title>" in page
    assert f"<title>{(TODAY - timedelta(days=29)).isoformat()}: $7.00 (1 payment)</title>" in page
    assert '<title id="volume-chart-title">' in page and '<desc id="volume-chart-desc">' in page
    for status, n in {"PENDING": 3, "PARTIALLY_PAID": 1, "COMPLETED": 6, "EXPIRED": 1, "CANCELED": 1}.items():
        assert re.search(
            rf'id="count-{status}" href="/dashboard/payments\?status={status}">\s*<strong>{n}</strong>', page
        ), status
    recent = re.search(r'<ul id="recent".*?</ul>', page, re.DOTALL).group(0)
    linked = re.findall(r'href="/dashboard/payments/([0-9A-Z]+)"', recent)
    assert linked == [p["short_id"] for p in reversed(month)][:10]

    shop.post(
        "/dashboard/mode",
        data={"csrf_token": csrf_of(shop.get("/dashboard/overview")), "mode": "live", "next": "/dashboard/overview"},
    )
    live = shop.get("/dashboard/overview").get_data(as_text=True)
    assert re.search(r'id="volume-total">\$500\.00<', live) and "from 1 payment<" in live
    assert re.search(r'id="count-PENDING" [^>]*>\s*<strong>1</strong>', live)
    assert len(re.findall(r'href="/dashboard/payments/[0-9A-Z]+"', live)) == 2


def test_an_empty_overview_has_thirty_zero_days(shop):
    page = shop.get("/dashboard/overview").get_data(as_text=True)
    assert page.count('class="chart-bar"') == 30 and page.count("$0.00 (0 payments)</title>") == 30
    assert "No completed payments in this period." in page and "No payments yet." in page
