"""What a customer meets around the checkout, in Chromium at both sizes (axe-core clean): with
JavaScript off the checkout claims no live updates and shows no Copy button that would do
nothing, and with it on it does both; "Cancel payment" asks to confirm before it cancels; an
error page offers a way back to where the customer came from; every page has a favicon."""

from __future__ import annotations

import re

import pytest
import requests
from playwright.sync_api import expect

from tests.support.axe import AXE
from tests.support.browser_checkout import api_payment, held_payment
from tests.support.screens import SIZES, looking, no_horizontal_scroll, open_page

pytestmark = pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci (make deps)")
SHOP = "https://shop.example/cart"


@pytest.mark.parametrize("size", SIZES)
def test_without_javascript_the_checkout_promises_only_what_it_does(
    size, stack, merchant, sessions, browser, screenshots
):
    """axe-core needs JavaScript: the same page is checked by it in the test below."""
    p = held_payment(stack, merchant, sessions)
    context, page = open_page(browser, SIZES[size], js=False)
    try:
        page.goto(p["checkout_url"])
        expect(page.locator("#status-detail")).to_have_text(
            "Once you have sent the payment, reload this page to see it arrive."
        )
        expect(page.locator("body")).not_to_contain_text("updates by itself")
        expect(page.get_by_role("button", name=re.compile("^Copy"))).to_have_count(0)
        expect(page.locator("#address")).to_be_visible()
        assert no_horizontal_scroll(page)
        page.screenshot(path=str(screenshots / f"checkout-no-js-{size}.png"), full_page=True)

        page.locator("#cancel-payment summary").click()  # a disclosure: no script needed
        expect(page.locator("#cancel-form")).to_contain_text("Cancel this payment?")
        page.screenshot(path=str(screenshots / f"checkout-no-js-cancel-confirm-{size}.png"), full_page=True)
        page.get_by_role("button", name=re.compile("^Yes, cancel the payment")).click()
        expect(page.locator("#status-text")).to_have_text("This payment was canceled")
    finally:
        context.close()
    assert api_payment(stack, merchant, p["id"])["status"] == "CANCELED"


@pytest.mark.parametrize("size", SIZES)
def test_with_javascript_the_checkout_updates_itself_and_cancel_asks_first(
    size, stack, merchant, sessions, browser, screenshots
):
    p = held_payment(stack, merchant, sessions)
    with looking(browser, size, screenshots) as (page, look):
        page.goto(p["checkout_url"])
        expect(page.locator("#status-detail")).to_have_text("This page updates by itself once your transfer is seen.")
        expect(page.get_by_role("button", name="Copy the address")).to_be_visible()
        expect(page.get_by_role("button", name="Copy the amount")).to_be_visible()
        page.locator("#cancel-payment summary").click()
        expect(page.get_by_role("button", name=re.compile("^Yes, cancel the payment"))).to_be_visible()
        assert api_payment(stack, merchant, p["id"])["status"] == "PENDING"  # opening it cancels nothing
        look("checkout-cancel-confirm")
        page.locator("#cancel-payment summary").click()  # changed their mind
        expect(page.get_by_role("button", name=re.compile("^Yes, cancel the payment"))).to_be_hidden()
    assert api_payment(stack, merchant, p["id"])["status"] == "PENDING"


@pytest.mark.parametrize("size", SIZES)
def test_an_error_page_leads_back_to_where_the_customer_came_from(size, stack, browser, screenshots):
    with looking(browser, size, screenshots) as (page, look):
        page.goto(f"{stack.base}/pay/NOSUCHPAY1", referer=SHOP)
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
        back = page.get_by_role("link", name="Back to shop.example")
        expect(back).to_have_attribute("href", SHOP)
        look("error-404-way-back")

        page.goto(f"{stack.base}/pay/NOSUCHPAY1")  # opened from a message: no page to go back to
        expect(page.locator("#way-back-hint")).to_contain_text("go back to the shop")
        look("error-404-no-referrer")


def test_every_page_has_a_favicon(stack, merchant, sessions, browser):
    icon = requests.get(f"{stack.base}/favicon.ico", timeout=5)
    assert icon.status_code == 200 and icon.headers["Content-Type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")
    p = held_payment(stack, merchant, sessions)
    with looking(browser, "390x844", None) as (page, _):
        page.goto(p["checkout_url"])
        href = page.locator("link[rel=icon]").get_attribute("href")
        assert requests.get(f"{stack.base}{href}", timeout=5).status_code == 200
