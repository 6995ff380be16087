"""Stores on the dashboard in real Chromium, on a 390×844 phone and a 1280×800 laptop (DESIGN
§14): the header's store switcher of an account with several stores, opened and used, the
members page, the list of its stores, and the page a refused action shows. Each fits the screen, axe-core
finds no serious problem, and the screenshots are kept in tests/artifacts/screens."""

from __future__ import annotations

import re
import secrets

import pytest
from playwright.sync_api import expect

from kassa_common import audit
from kassa_common.accounts import merchants, stores
from kassa_common.db import unit_of_work
from tests.support.browser_dashboard import PASSWORD, log_in
from tests.support.screens import SIZES, looking


@pytest.fixture(scope="module")
def team(sessions) -> dict[str, str]:
    """Ada owns Corner Shop (Bob manages it) and Tea Corner, and is a viewer of Bob's Bike Repairs."""
    ada, bob = (f"{who}-{secrets.token_hex(4)}@example.com" for who in ("ada", "bob"))
    with unit_of_work(sessions) as s:
        corner = merchants.create_merchant(s, ada, PASSWORD, "Corner Shop", activate=True)
        merchants.create_store(s, ada, "Tea Corner")
        bikes = merchants.create_merchant(s, bob, PASSWORD, "Bob's Bike Repairs", activate=True)
        stores.set_member(s, bikes.id, stores.account_by_email(s, ada), "viewer", actor=audit.OPERATOR)
        stores.set_member(s, corner.id, stores.account_by_email(s, bob), "manager", actor=audit.OPERATOR)
    return {"ada": ada, "bob": bob}


@pytest.mark.parametrize("size", SIZES)
def test_the_store_switcher_the_stores_page_and_a_refusal_read_right(size, stack, team, browser, screenshots):
    with looking(browser, size, screenshots) as (page, look):
        log_in(page, stack, team["ada"])
        switcher = page.locator("#store-switcher")
        expect(switcher.locator(".dash-brand")).to_have_text("Corner Shop")
        switcher.locator("summary").click()
        expect(switcher.get_by_role("button", name="Tea Corner")).to_be_visible()
        expect(switcher.get_by_role("button", name="Bob's Bike Repairs")).to_be_visible()
        look("dashboard-store-switcher")

        page.get_by_role("link", name="Members").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Members")
        expect(page.locator("#members .row")).to_have_count(2)
        expect(page.get_by_label(f"Role of {team['bob']}", exact=True)).to_have_value("manager")
        look("dashboard-members")
        page.get_by_role("button", name=f"Remove {team['bob']}").click()
        expect(page.locator("#confirm-question")).to_have_text(f"Remove {team['bob']} from this store?")
        look("dashboard-member-remove-confirm")
        page.get_by_role("link", name="Keep it").click()
        page.locator("#store-switcher summary").click()

        switcher.get_by_role("button", name="Tea Corner").click()
        page.wait_for_url(re.compile(r"/dashboard/members$"))  # the same section, in the other store
        expect(page.locator("#members .row")).to_have_count(1)
        expect(page.locator("#store-switcher .dash-brand")).to_have_text("Tea Corner")

        page.goto(f"{stack.base}/dashboard/stores")
        expect(page.get_by_role("heading", level=1)).to_have_text("Stores")
        expect(page.locator("#stores .row")).to_have_count(3)
        expect(page.locator("#stores .row", has_text="Bob's Bike Repairs")).to_contain_text("viewer")
        expect(page.locator("#stores .row", has_text="Tea Corner").locator("#current-store")).to_be_visible()
        look("dashboard-stores")

        page.locator("#stores .row", has_text="Bob's Bike Repairs").get_by_role(
            "button", name="Open Bob's Bike Repairs"
        ).click()
        page.wait_for_url(re.compile(r"/dashboard/overview$"))
        expect(page.get_by_role("link", name="API keys")).to_have_count(0)  # a viewer has none to open
        page.goto(f"{stack.base}/dashboard/keys")
        expect(page.get_by_role("heading", level=1)).to_have_text("This needs the manager role")
        expect(page.locator("#refused")).to_contain_text("You are a viewer of Bob's Bike Repairs")
        look("dashboard-refused")
