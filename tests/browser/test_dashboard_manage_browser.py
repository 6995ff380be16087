"""A merchant manages products, webhooks and wallets in real Chromium; every dashboard page
fits a 390×844 phone screen."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.payments.addresses import first_address
from tests.support.browser_dashboard import dashboard_merchant, log_in
from tests.support.screens import no_horizontal_scroll
from tests.support.wait import until


def reloaded_text(page, selector: str) -> str:
    """The text of ``selector`` after a reload: the sender records an outcome just after the
    receiver has answered, so the page is read again until it shows the recorded one."""
    page.reload()
    return page.locator(selector).inner_text()


def test_merchant_manages_a_product_a_webhook_and_a_wallet(stack, sessions, page, receiver):
    log_in(page, stack, dashboard_merchant(sessions))

    page.get_by_role("link", name="Products").click()
    page.locator("#product-name").fill("Blue mug")
    page.locator("#product-price").fill("12.50")
    page.get_by_role("button", name="Create product").click()
    link = page.locator("#products code").first.inner_text().strip()
    assert re.fullmatch(rf"{re.escape(stack.base)}/products/[0-9a-f-]{{36}}", link)
    page.goto(link)
    expect(page.locator("h1")).to_have_text("Blue mug")

    page.goto(f"{stack.base}/dashboard/webhooks")
    page.locator("#webhook-url").fill(receiver.url)
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.locator("#new-secret")).to_contain_text("whsec_")
    page.get_by_role("link", name=receiver.url).click()
    page.get_by_role("button", name="Send test event").click()
    hit = until(lambda: receiver.events("webhook.test"), 30, message="the test event")[0]
    until(lambda: "succeeded" in reloaded_text(page, "#deliveries"), 30, message="the sender to record the delivery")
    expect(page.locator("#deliveries")).to_contain_text(hit.json["id"])
    expect(page.locator("#deliveries")).to_contain_text("succeeded")

    page.goto(f"{stack.base}/dashboard/wallets")
    page.locator("#xpub-evm").fill(TEST_XPUBS["evm"])
    page.get_by_role("button", name="Save EVM wallet").click()
    expect(page.locator("#first-evm")).to_have_text(first_address("evm", TEST_XPUBS["evm"], test_mode=True))


def test_dashboard_pages_fit_a_phone_screen(stack, sessions, phone, artifacts):
    log_in(phone, stack, dashboard_merchant(sessions))
    phone.goto(f"{stack.base}/dashboard/products")
    phone.locator("#product-name").fill("A product with a rather long name for a small screen")
    phone.locator("#product-price").fill("9")
    phone.get_by_role("button", name="Create product").click()
    phone.goto(f"{stack.base}/dashboard/webhooks")
    phone.locator("#webhook-url").fill("http://127.0.0.1:9/a/rather/long/path/for/a/webhook/endpoint/on/a/phone")
    phone.get_by_role("button", name="Add endpoint").click()
    expect(phone.locator("#new-secret")).to_be_visible()
    for name in ("payments", "keys", "products", "webhooks", "wallets"):
        phone.goto(f"{stack.base}/dashboard/{name}")
        assert no_horizontal_scroll(phone), f"/dashboard/{name} scrolls sideways"
        phone.screenshot(path=str(artifacts / f"dashboard-{name}-390x844.png"), full_page=True)
