"""The dashboard overview on a 390×844 phone in real Chromium: the merchant lands on it, and
the volume chart shows 30 bars within the screen's width."""

from __future__ import annotations

import uuid
from datetime import timedelta

import requests
import sqlalchemy as sa
from playwright.sync_api import expect

from kassa_common import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Payment
from kassa_common.timefmt import utcnow
from tests.browser.test_checkout_browser import no_horizontal_scroll
from tests.browser.test_dashboard_manage_browser import dashboard_merchant, log_in
from tests.support.wait import until

AMOUNTS = ["1250.00", "80.00", "432.10", "15.99", "999.00", "260.00", "49.50"]


def completed_across_the_month(stack, sessions, email: str) -> None:
    """Test payments that the stack completes by itself, then moved to days spread over the 30."""
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, merchants.merchant_by_email(s, email).id, "test", ["payments:create"]).key
    ids = []
    for amount in AMOUNTS:
        r = requests.post(
            f"{stack.api}/payments",
            json={"amount": float(amount), "token": "USDC", "network": "BASE"},
            headers={"X-Api-Key": key},
            timeout=5,
        )
        assert r.status_code == 201, r.text
        ids.append(uuid.UUID(r.json()["data"]["id"]))

    def all_completed() -> bool:
        with sessions() as s:
            return s.scalar(
                sa.select(sa.func.count()).where(Payment.id.in_(ids), Payment.status == "COMPLETED")
            ) == len(ids)

    until(all_completed, 60, message="the stack to complete the test payments")
    with unit_of_work(sessions) as s:
        for back, pid in zip((0, 2, 5, 9, 16, 23, 29), ids, strict=False):
            s.execute(sa.update(Payment).where(Payment.id == pid).values(completed_at=utcnow() - timedelta(days=back)))


def test_the_overview_chart_fits_a_phone_screen(stack, sessions, phone, tmp_path):
    email = dashboard_merchant(sessions)
    completed_across_the_month(stack, sessions, email)
    log_in(phone, stack, email)  # lands on the overview
    chart = phone.locator("#volume-chart")
    expect(chart).to_be_visible()
    expect(chart.locator(".chart-bar")).to_have_count(30)
    expect(phone.locator("#volume-total")).to_have_text("$3,086.59")
    box = chart.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["height"] > 100
    assert no_horizontal_scroll(phone), "the overview scrolls sideways"
    shot = tmp_path / "dashboard-overview-390x844.png"
    phone.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 0
