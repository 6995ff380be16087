"""Every state of the hosted checkout in real Chromium, with JavaScript and without: the
server renders what the customer needs (what arrived, what happens next, where to go), the
receipt prints, and axe-core finds no serious accessibility problem.

Screenshots go to ``KASSA_SCREENSHOTS`` when set (to look at them), else to a temporary folder."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from kassa_common import payments
from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.models import Payment
from kassa_common.statuses import TransferStatus
from tests.support.axe import AXE, serious_violations
from tests.support.browser_checkout import TIMEOUT_MS, api_payment, cancel_on_checkout, held_payment
from tests.support.screens import DESKTOP, SIZES, no_horizontal_scroll, open_page
from tests.support.transfers import report

STATES = ("pending", "seen", "partially_paid", "completed", "expired", "canceled")


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> Path:
    wanted = os.environ.get("KASSA_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        return Path(wanted)
    return tmp_path_factory.mktemp("screens")


def reach(page, url: str, state: str) -> None:
    """Reload (as a customer without JavaScript would) until the page shows ``state``."""
    for _ in range(60):
        page.goto(url)
        if page.locator(f'#checkout[data-state="{state}"]').count():
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"{url} never showed {state}: {page.locator('#status-text').text_content()}")


def payment_in(state: str, stack, merchant, sessions, browser) -> dict:
    """A test payment (10 USDC on Base) brought to ``state`` the way a tester does it, through
    the checkout's own forms in a browser without JavaScript."""
    p = held_payment(
        stack,
        merchant,
        sessions,
        amount=10,
        redirect_url=f"{stack.base}/healthz?from=paid",
        cancel_url=f"{stack.base}/healthz?from=cart",
    )
    url = p["checkout_url"]
    context, page = open_page(browser, DESKTOP, js=False)
    try:
        page.goto(url)
        if state == "seen":
            seen = report(p, TransferStatus.SEEN, 10_000_000, 1)
            with sessions.begin() as s:  # the settler gets it through the outbox, as a watcher's report
                outbox.record(
                    s,
                    seen.to_message(new_event_id()),
                    merchant_id=merchant.id,
                    test_mode=True,
                    payment_id=uuid.UUID(p["id"]),
                )
            for _ in range(60):
                if api_payment(stack, merchant, p["id"])["transaction_hash"]:
                    break
                page.wait_for_timeout(300)
        elif state != "pending":
            button = {
                "partially_paid": page.get_by_role("button", name="pay part"),
                "completed": page.get_by_role("button", name="pay", exact=True),
                "expired": page.get_by_role("button", name="let it expire"),
                "canceled": None,
            }[state]
            if button is None:
                cancel_on_checkout(page)
            else:
                button.click()
            page.wait_for_load_state()
        reach(page, url, "pending" if state == "seen" else state)
    finally:
        context.close()
    return p


def check_state(page, state: str, p: dict, js: bool) -> None:
    """What each state must say, whoever renders it."""
    status, detail = page.locator("#status-text"), page.locator("#status-detail")
    expect(page.locator("#checkout")).to_have_attribute("data-state", "pending" if state == "seen" else state)
    assert "Loading" not in (status.text_content() or "")
    back = page.locator("#back-to-merchant")
    if state == "pending":
        expect(status).to_have_text("Waiting for payment…")
        expect(page.locator("#open-wallet")).to_have_attribute("href", re.compile(r"^ethereum:0x[0-9a-fA-F]{40}@8453/"))
        expect(page.get_by_role("button", name="pay part")).to_be_visible()
        expect(page.locator("#countdown")).to_have_text(re.compile(r"^\d{2}:\d{2}$"))
    elif state == "seen":
        expect(status).to_have_text("Payment seen, waiting for confirmations")
        expect(detail).to_contain_text("confirmations")
        expect(page.locator("#arrivals")).to_contain_text("10 USDC")
        expect(page.locator("#cancel-form")).to_have_count(0)
    elif state == "partially_paid":
        expect(status).to_have_text("Partially paid")
        expect(detail).to_contain_text("Received 5 USDC. Send the remaining 5 USDC")
        expect(page.locator("#amount-value")).to_have_text("5")
        expect(page.locator("#arrivals")).to_contain_text("5 USDC")
        expect(page.locator("#open-wallet")).to_have_attribute("href", re.compile(r"uint256=5000000$"))
    elif state == "completed":
        expect(status).to_have_text("Payment complete. Thank you!")
        expect(page.locator("h1.amount")).to_contain_text("10 USDC")  # what was paid, never "0 USDC"
        expect(detail).to_contain_text("10 USDC arrived on Base")
        expect(page.locator("#arrivals")).to_contain_text(re.compile(r"transaction test_tx_"))
        expect(back).to_have_attribute("href", re.compile(r"/healthz\?from=paid$"))
        expect(back).to_contain_text("Back to")
        expect(page.locator("#receipt-link")).to_be_visible()
        expect(page.locator(".test-banner")).to_contain_text("nothing left to simulate")
        expect(page.locator("#address")).to_have_count(0)
    elif state == "expired":
        expect(status).to_have_text("This payment has expired")
        expect(detail).to_contain_text("Nothing arrived in time")
        expect(back).to_have_attribute("href", re.compile(r"/healthz\?from=cart$"))
        expect(page.locator("#receipt-link")).to_have_count(0)
    elif state == "canceled":
        expect(status).to_have_text("This payment was canceled")
        expect(detail).to_contain_text("Nothing was paid")
        expect(back).to_have_attribute("href", re.compile(r"/healthz\?from=cart$"))
    expect(page.locator(".ref")).to_have_text(f"Payment reference {p['short_id']}")
    if not js and state in ("seen", "partially_paid"):
        expect(page.locator("noscript")).to_have_count(1)
    if state == "pending":  # what it says of updates is true with JavaScript and without
        expect(detail).to_have_text(
            "This page updates by itself once your transfer is seen."
            if js
            else "Once you have sent the payment, reload this page to see it arrive."
        )


@pytest.mark.parametrize("state", STATES)
def test_each_checkout_state_reads_right_with_and_without_javascript(
    state, stack, merchant, sessions, browser, screens
):
    p = payment_in(state, stack, merchant, sessions, browser)
    for js in (False, True):
        for name, size in SIZES.items():
            context, page = open_page(browser, size, js)
            try:
                page.goto(p["checkout_url"])
                if js:
                    page.wait_for_timeout(3000)  # a poll or two: the page must stay as rendered
                check_state(page, state, p, js)
                assert no_horizontal_scroll(page)
                page.screenshot(
                    path=str(screens / f"checkout-{state}-{'js' if js else 'nojs'}-{name}.png"), full_page=True
                )
            finally:
                context.close()


def test_a_completed_payment_reloaded_later_stays_on_its_page(stack, merchant, sessions, browser):
    p = payment_in("completed", stack, merchant, sessions, browser)
    context, page = open_page(browser, DESKTOP, js=True)
    try:
        page.goto(p["checkout_url"])
        page.wait_for_timeout(4000)  # the redirect is only for a tab that watched the payment complete
        assert page.url == p["checkout_url"]
        expect(page.locator("#redirect-note")).to_be_hidden()
    finally:
        context.close()


def test_a_tab_watching_a_payment_that_completes_shows_it_and_goes_back_to_the_shop(stack, merchant, sessions, page):
    p = held_payment(stack, merchant, sessions, amount=10, redirect_url=f"{stack.base}/healthz?from=watched")
    page.goto(p["checkout_url"])
    expect(page.locator("#status-text")).to_have_text("Waiting for payment…")
    with sessions.begin() as s:  # paid from elsewhere (the tester's other tab): this tab sees it complete
        payments.pay(s, s.get(Payment, uuid.UUID(p["id"])))
    expect(page.locator("#status-text")).to_have_text("Payment complete. Thank you!", timeout=TIMEOUT_MS)
    expect(page.locator("#redirect-note")).to_have_text("Taking you back to the shop…")
    page.wait_for_url(f"{stack.base}/healthz?from=watched", timeout=TIMEOUT_MS)


@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_the_receipt_of_a_completed_payment_prints(js, stack, merchant, sessions, browser, screens):
    p = payment_in("completed", stack, merchant, sessions, browser)
    suffix = "js" if js else "nojs"
    for name, size in SIZES.items():
        context, page = open_page(browser, size, js)
        try:
            page.goto(p["checkout_url"])
            page.locator("#receipt-link").click()
            page.wait_for_url(re.compile(r"/receipt$"))
            expect(page.locator("h1")).to_have_text("Acme Ltd")
            expect(page.locator("#receipt-amount")).to_have_text("$10.00 USD")
            expect(page.locator("#receipt-crypto")).to_have_text("10 USDC")
            expect(page.locator("#receipt-rate")).to_have_text("1 USDC = $1.00 USD")
            expect(page.locator("#receipt-network")).to_have_text("Base")
            expect(page.locator("#receipt-transactions")).to_contain_text("test_tx_")
            expect(page.locator("#receipt-date")).to_have_text(re.compile(r"^\d{2} \w+ \d{4}, \d{2}:\d{2} UTC$"))
            expect(page.locator("#receipt-reference")).to_have_text(p["short_id"])
            printing = expect(page.locator("#print-receipt"))
            printing.to_be_visible() if js else printing.to_be_hidden()
            assert no_horizontal_scroll(page)
            page.screenshot(path=str(screens / f"receipt-{suffix}-{name}.png"), full_page=True)
            page.emulate_media(media="print")
            expect(page.locator(".footer")).to_be_hidden()
            expect(page.locator(".no-print")).to_be_hidden()
            page.screenshot(path=str(screens / f"receipt-{suffix}-{name}-print.png"), full_page=True)
        finally:
            context.close()
    open_one = held_payment(stack, merchant, sessions)
    r = requests.get(f"{stack.base}/pay/{open_one['short_id']}/receipt", timeout=5)
    assert r.status_code == 404 and "A receipt exists once a payment is complete" in r.text


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci (make deps)")
def test_axe_finds_no_serious_problem_on_any_checkout_state_or_the_receipt(stack, merchant, sessions, browser):
    found: dict[str, list] = {}
    pages = {name: open_page(browser, size) for name, size in SIZES.items()}
    try:
        for state in STATES:
            p = payment_in(state, stack, merchant, sessions, browser)
            targets = [p["checkout_url"]] + ([f"{p['checkout_url']}/receipt"] if state == "completed" else [])
            for url in targets:
                for name, (_, page) in pages.items():
                    page.goto(url)
                    bad = serious_violations(page)
                    if bad:
                        found[f"{url} at {name}"] = bad
    finally:
        for context, _ in pages.values():
            context.close()
    assert not found, found
