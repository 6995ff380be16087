"""A merchant sets the payment lifetime and underpayment tolerance on a phone, and downloads
the filtered payments list as CSV, in real Chromium against the running stack."""

from __future__ import annotations

import csv
import re

import requests
import sqlalchemy as sa
from playwright.sync_api import expect

from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant
from tests.support.browser_dashboard import dashboard_merchant, log_in
from tests.support.screens import no_horizontal_scroll


def test_merchant_sets_payment_settings_on_a_phone(stack, sessions, phone, tmp_path):
    log_in(phone, stack, dashboard_merchant(sessions))
    phone.get_by_role("link", name="Settings").click()
    expect(phone.locator("h1")).to_have_text("Settings")
    expect(phone.locator("#current-settings")).to_contain_text("(the default)")

    phone.locator("#payment-lifetime").fill("10")
    phone.locator("#underpayment-tolerance").fill("0.5")
    phone.get_by_role("button", name="Save settings").click()
    expect(phone.locator("#payment-lifetime-error")).to_contain_text(
        "Payment lifetime must be a whole number of minutes from 15 to 2880"
    )
    expect(phone.locator("#payment-lifetime")).to_have_value("10")  # kept, to correct it
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(tmp_path / "settings-refused-390x844.png"), full_page=True)

    phone.locator("#payment-lifetime").fill("90")
    phone.get_by_role("button", name="Save settings").click()
    expect(phone.locator(".notice")).to_contain_text("Settings saved.")
    expect(phone.locator("#current-settings")).to_contain_text("90 minutes")
    expect(phone.locator("#current-settings")).to_contain_text("0.5%")
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(tmp_path / "settings-390x844.png"), full_page=True)
    print(f"screenshots: {tmp_path}")


def test_export_csv_downloads_the_filtered_list(stack, sessions, page):
    email = dashboard_merchant(sessions)
    with unit_of_work(sessions) as s:
        merchant_id = s.scalars(sa.select(Merchant.id).where(Merchant.email == email)).one()
        key = keys.create_key(s, merchant_id, "test", ["payments:create"]).key
    for name in ('=HYPERLINK("http://evil.example","x")', "Ann Example", "Bob Nobody"):
        r = requests.post(
            f"{stack.api}/payments",
            json={"amount": 3, "token": "USDC", "network": "BASE", "customer_name": name},
            headers={"X-Api-Key": key},
            timeout=5,
        )
        assert r.status_code == 201, r.text
    log_in(page, stack, email)
    page.goto(f"{stack.base}/dashboard/payments")  # login lands on the overview
    page.get_by_role("searchbox", name="Search").fill("example")
    page.get_by_role("button", name="Filter").click()
    with page.expect_download() as info:
        page.get_by_role("link", name="Export CSV").click()
    download = info.value
    assert re.fullmatch(r"kassa-payments-test-\d{4}-\d{2}-\d{2}\.csv", download.suggested_filename)
    with open(download.path(), newline="", encoding="utf-8") as f:
        names = sorted(row["customer_name"] for row in csv.DictReader(f))
    assert names == ['\'=HYPERLINK("http://evil.example","x")', "Ann Example"]
