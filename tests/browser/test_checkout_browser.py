"""A customer in real Chromium: the hosted checkout and the product page against the running stack."""

from __future__ import annotations

import dataclasses
import re
import uuid

from playwright.sync_api import expect

from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.statuses import TransferStatus
from tests.support.browser_checkout import (
    TIMEOUT_MS,
    api_payment,
    cancel_on_checkout,
    create_product,
    held_payment,
    qr_text,
)
from tests.support.screens import no_horizontal_scroll
from tests.support.transfers import report


def test_customer_pays_a_test_payment_and_lands_on_redirect_url(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions, redirect_url=f"{stack.base}/healthz")
    page.goto(p["checkout_url"])
    expect(page.locator("#address")).to_have_text(p["address"])
    expect(page.locator("#amount-value")).to_have_text(p["crypto_amount"])
    expect(page.locator(".usd").first).to_contain_text("$12.34")
    expect(page.locator(".warning")).to_contain_text("Send only USDC on Base")
    expect(page.locator(".qr svg")).to_be_visible()
    expect(page.locator("#status-text")).to_have_text("Waiting for payment…")
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^\d{2}:\d{2}$"))
    page.get_by_role("button", name="pay", exact=True).click()
    expect(page.locator("#status-text")).to_have_text("Payment complete. Thank you!", timeout=TIMEOUT_MS)
    page.wait_for_url(f"{stack.base}/healthz", timeout=TIMEOUT_MS)
    assert api_payment(stack, merchant, p["id"])["status"] == "COMPLETED"


def test_pay_part_shows_partially_paid_with_the_remainder(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions, amount=10)
    page.goto(p["checkout_url"])
    page.get_by_role("button", name="pay part").click()
    expect(page.locator("#status-text")).to_have_text("Partially paid", timeout=TIMEOUT_MS)
    expect(page.locator("#status-detail")).to_contain_text("Send the remaining 5 USDC")


def test_cancel_link_lands_on_cancel_url_and_the_api_shows_canceled(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions, cancel_url=f"{stack.base}/healthz?from=checkout")
    page.goto(p["checkout_url"])
    cancel_on_checkout(page)
    page.wait_for_url(f"{stack.base}/healthz?from=checkout")
    assert api_payment(stack, merchant, p["id"])["status"] == "CANCELED"


def test_form_posted_without_its_csrf_token_is_refused(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions)
    page.goto(p["checkout_url"])
    page.locator("#cancel-form input[name=csrf_token]").evaluate("el => el.remove()")
    with page.expect_navigation() as nav:
        cancel_on_checkout(page)
    assert nav.value.status == 403
    expect(page.locator("h1")).to_have_text("Forbidden")
    assert api_payment(stack, merchant, p["id"])["status"] == "PENDING"


def test_product_share_link_to_checkout_of_a_payment_for_that_product(stack, merchant, page):
    product = create_product(stack, merchant)
    page.goto(product["share_link"])
    expect(page.locator("h1")).to_have_text("Blue mug")
    page.locator("#pair").select_option("BASE:USDC")
    page.locator("#email").fill("buyer@example.com")
    page.get_by_role("button", name="Pay", exact=True).click()
    page.wait_for_url(re.compile(r"/pay/[A-Z0-9]+$"))
    short_id = page.url.rsplit("/", 1)[1]
    got = api_payment(stack, merchant, short_id)
    assert got["product_id"] == product["id"] and got["amount"] == 19.99 and got["network"] == "BASE"
    expect(page.locator("#address")).to_have_text(got["address"])


def test_checkout_and_product_page_fit_a_phone_screen(stack, merchant, sessions, phone, artifacts):
    p = held_payment(stack, merchant, sessions, network="BITCOIN", token="BTC")
    phone.goto(p["checkout_url"])
    expect(phone.locator("#status-text")).to_have_text("Waiting for payment…")
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(artifacts / "checkout-390x844.png"), full_page=True)
    product = create_product(stack, merchant, description="A long description " * 20)
    phone.goto(product["share_link"])
    expect(phone.locator("h1")).to_have_text("Blue mug")
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(artifacts / "product-390x844.png"), full_page=True)


def test_after_pay_part_the_qr_code_amount_and_copy_button_ask_for_the_remainder(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions, amount=10)
    usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"  # USDC on BASE
    wanted = f"ethereum:{usdc}@8453/transfer?address={p['address']}&uint256={{}}"
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.base)
    page.goto(p["checkout_url"])
    assert qr_text(page) == wanted.format(10_000_000)
    page.get_by_role("button", name="pay part").click()
    expect(page.locator("#status-text")).to_have_text("Partially paid", timeout=TIMEOUT_MS)
    expect(page.locator("#amount-value")).to_have_text("5")
    expect(page.locator("#crypto-amount")).to_have_text("5")
    assert qr_text(page) == wanted.format(5_000_000)
    assert page.locator(".qr a").get_attribute("href") == wanted.format(5_000_000)
    page.locator("button[data-copy=amount-value]").click()
    expect(page.locator("button[data-copy=amount-value]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "5"


def test_once_the_transfer_is_seen_the_cancel_link_goes_and_a_cancel_sent_anyway_says_why(
    stack, merchant, sessions, page
):
    p = held_payment(stack, merchant, sessions)
    page.goto(p["checkout_url"])
    cancel = page.locator("#cancel-payment summary")
    expect(cancel).to_be_visible()
    kept = page.locator("#cancel-form").evaluate("form => form.outerHTML")  # the page reloads once it is seen
    seen = report(p, TransferStatus.SEEN, 12_340_000, 1)
    with sessions.begin() as s:  # the settler gets it through the outbox, as a watcher's report
        outbox.record(
            s, seen.to_message(new_event_id()), merchant_id=merchant.id, test_mode=True, payment_id=uuid.UUID(p["id"])
        )
    expect(page.locator("#status-text")).to_have_text("Payment seen, waiting for confirmations", timeout=TIMEOUT_MS)
    expect(cancel).to_be_hidden()
    with page.expect_navigation() as nav:  # a tab that still had the form, or a replayed post
        page.evaluate(
            "form => { document.body.insertAdjacentHTML('beforeend', form); document.body.lastElementChild.submit(); }",
            kept,
        )
    assert nav.value.status == 409
    expect(page.locator("#notice")).to_contain_text("can no longer be canceled")
    expect(cancel).to_have_count(0)
    assert api_payment(stack, merchant, p["id"])["status"] == "PENDING"


def test_funds_sent_on_the_wrong_network_get_a_notice_while_the_payment_still_waits(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions)  # USDC on BASE
    page.goto(p["checkout_url"])
    expect(page.locator("#status-text")).to_have_text("Waiting for payment…", timeout=TIMEOUT_MS)
    expect(page.locator("#wrong-network")).to_have_count(0)
    on_ethereum = dataclasses.replace(report(p, TransferStatus.CONFIRMED, 12_340_000, 12), network="ETHEREUM")
    with sessions.begin() as s:  # the settler gets it through the outbox, as ETHEREUM's watcher's report
        outbox.record(
            s,
            on_ethereum.to_message(new_event_id()),
            merchant_id=merchant.id,
            test_mode=True,
            payment_id=uuid.UUID(p["id"]),
        )

    notice = page.locator("#wrong-network")
    expect(notice).to_contain_text("12.34 USDC arrived on Ethereum, not on Base", timeout=TIMEOUT_MS)
    expect(notice).to_contain_text("can recover it")
    expect(page.locator("#status-text")).to_have_text("Waiting for payment…")
    expect(page.locator("#amount-value")).to_have_text("12.34")
    assert api_payment(stack, merchant, p["id"])["status"] == "PENDING"
