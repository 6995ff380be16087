"""The dashboard overview on a 390×844 phone in real Chromium: the merchant lands on it, and
the volume chart shows 30 bars within the screen's width."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.browser_dashboard import completed_across_the_month, dashboard_merchant, log_in
from tests.support.screens import no_horizontal_scroll


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
