"""The dashboard's payment detail and overview on a 390×844 phone in real Chromium: the chart's
labels are drawn at a readable size and inside the chart, the recent payments have dates,
and the detail's long values (address, hash, checkout link) wrap instead of widening the page."""

from __future__ import annotations

import requests
from playwright.sync_api import expect

from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from tests.support.browser_dashboard import completed_across_the_month, dashboard_merchant, log_in
from tests.support.screens import no_horizontal_scroll

MIN_LABEL_PX = 12  # the smallest chart text a phone shows, in CSS pixels

LABEL_SIZES = """svg => {
  const scale = svg.getScreenCTM().a;  // CSS pixels per user unit
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale,
            inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.bottom <= box.bottom + 0.5};
  });
}"""


def test_the_overview_chart_labels_are_readable_on_a_phone(stack, sessions, phone, artifacts):
    email = dashboard_merchant(sessions)
    completed_across_the_month(stack, sessions, email)
    log_in(phone, stack, email)  # lands on the overview
    chart = phone.locator("#volume-chart")
    expect(chart).to_be_visible()
    labels = chart.evaluate(LABEL_SIZES)
    assert len(labels) == 5 + 5  # the y ticks and the date labels
    small = [(label["text"], round(label["px"], 1)) for label in labels if label["px"] < MIN_LABEL_PX]
    assert not small, f"chart labels smaller than {MIN_LABEL_PX}px on a phone: {small}"
    assert all(label["inside"] for label in labels), labels
    expect(phone.locator("#recent .payment-date")).to_have_count(7)
    assert no_horizontal_scroll(phone), "the overview scrolls sideways"
    phone.screenshot(path=str(artifacts / "dashboard-overview-390x844.png"), full_page=True)


def test_the_payment_detail_fits_a_phone_with_everything_on_it(stack, sessions, phone, artifacts):
    email = dashboard_merchant(sessions)
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, merchants.merchant_by_email(s, email).id, "test", ["payments:create"]).key
    r = requests.post(
        f"{stack.api}/payments",
        json={
            "amount": 42.5,
            "token": "USDC",
            "network": "BASE",
            "customer_name": "Ada Lovelace",
            "customer_email": "ada@example.com",
            "metadata": {"order_id": "ORD-1042", "sku": "mug-blue"},
        },
        headers={"X-Api-Key": key},
        timeout=5,
    )
    assert r.status_code == 201, r.text
    short_id = r.json()["data"]["short_id"]
    log_in(phone, stack, email)
    phone.goto(f"{stack.base}/dashboard/payments/{short_id}")
    expect(phone.locator("#customer")).to_have_text("Ada Lovelaceada@example.com")
    expect(phone.locator("#metadata dt")).to_have_text(["order_id", "sku"])
    expect(phone.locator("#crypto-due")).to_contain_text("42.5")
    expect(phone.locator("#expires")).to_contain_text("UTC")
    assert no_horizontal_scroll(phone), "the payment detail scrolls sideways"
    phone.screenshot(path=str(artifacts / "dashboard-payment-390x844.png"), full_page=True)
    phone.goto(f"{stack.base}/dashboard/payments")
    expect(phone.locator(".payment-order")).to_have_text("order ORD-1042")
    assert no_horizontal_scroll(phone), "the payments list scrolls sideways"
    phone.screenshot(path=str(artifacts / "dashboard-payments-390x844.png"), full_page=True)


def test_the_overview_chart_on_a_wide_screen_keeps_its_labels_inside(stack, sessions, page, artifacts):
    email = dashboard_merchant(sessions)
    completed_across_the_month(stack, sessions, email)
    log_in(page, stack, email)
    labels = page.locator("#volume-chart").evaluate(LABEL_SIZES)
    assert all(label["inside"] and label["px"] >= MIN_LABEL_PX for label in labels), labels
    page.screenshot(path=str(artifacts / "dashboard-overview-1280x800.png"), full_page=True)
