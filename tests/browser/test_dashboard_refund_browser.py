"""A merchant refunds an over-paid payment from the dashboard on a 390×844 phone screen, in
real Chromium: the excess proposed on the payment's page, the refund page with its claim
link, then (claimed) the EIP-681 URI of its ``payout_amount`` and its QR code, copy buttons, and
(a test refund: no browser wallet, no hash form) the simulated payout; cancel with a
confirmation; the refunds list filtered by status. Screenshots go to the test's temporary
folder, to be looked at."""

from __future__ import annotations

import re
import secrets
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Refund
from kassa_common.refunds import transitions
from tests.support.browser_checkout import qr_text
from tests.support.browser_dashboard import PASSWORD, log_in, over_paid_payment
from tests.support.screens import no_horizontal_scroll

CUSTOMER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where the screenshots go: the test's temporary folder (``--basetemp`` to keep them)."""
    return tmp_path


def merchant_with_key(sessions) -> tuple[str, str]:
    email = f"refund-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, email, PASSWORD, "Corner Shop", activate=True)
        key = keys.create_key(s, m.id, "test", ["payments:create", "payments:read"]).key
    return email, key


def claim(sessions, refund_id: str, address: str) -> None:
    with unit_of_work(sessions) as s:
        token = s.get(Refund, uuid.UUID(refund_id)).claim_token
        transitions.claim_refund(s, token, address)


def test_merchant_refunds_the_excess_and_simulates_its_payout(stack, sessions, phone, shots):
    email, key = merchant_with_key(sessions)
    p = over_paid_payment(stack, sessions, key)
    log_in(phone, stack, email)

    phone.goto(f"{stack.base}/dashboard/payments/{p['short_id']}")
    form = phone.locator(".refund-form").first
    expect(form).to_contain_text("the excess over what was due")
    expect(form.locator("input[name=amount]")).to_have_value("2.66")
    form.locator("input[name=reason]").fill("paid too much")
    phone.screenshot(path=str(shots / "payment-refund-form-390x844.png"), full_page=True)
    assert no_horizontal_scroll(phone)
    form.get_by_role("button", name="Refund").click()

    phone.wait_for_url(re.compile(r"/dashboard/refunds/[0-9a-f-]{36}$"))
    refund_id = phone.url.rsplit("/", 1)[-1]
    expect(phone.locator("#refund-status")).to_have_text("awaiting address")
    expect(phone.locator("#claim-url")).to_contain_text(f"{stack.base}/refunds/")
    phone.screenshot(path=str(shots / "refund-awaiting-address-390x844.png"), full_page=True)
    assert no_horizontal_scroll(phone)

    claim(sessions, refund_id, CUSTOMER)
    phone.reload()
    expect(phone.locator("#refund-status")).to_have_text("awaiting payment")
    with sessions() as s:
        due = 2_660_000 + s.get(Refund, uuid.UUID(refund_id)).payout_tag  # payout_amount: the amount and its tag
    uri = f"ethereum:{BASE_USDC}@8453/transfer?address={CUSTOMER}&uint256={due}"
    expect(phone.locator("#refund-uri")).to_have_text(uri)
    expect(phone.locator("#refund-address")).to_have_text(CUSTOMER)
    expect(phone.locator("#refund-amount")).to_have_text(f"2.{due - 2_000_000:06d}".rstrip("0"))
    assert qr_text(phone) == uri
    phone.screenshot(path=str(shots / "refund-pay-390x844.png"), full_page=True)
    assert no_horizontal_scroll(phone)

    # a test refund moves no funds: no browser wallet, no hash to check, a simulated payout instead
    expect(phone.get_by_role("button", name="Pay with browser wallet")).to_have_count(0)
    expect(phone.locator("#complete-form")).to_have_count(0)
    phone.get_by_role("button", name="Simulate the payout").click()
    expect(phone.locator("#refund-status")).to_have_text("completed")
    expect(phone.locator("#refund-tx")).to_contain_text("test_tx_")
    phone.screenshot(path=str(shots / "refund-completed-390x844.png"), full_page=True)
    assert no_horizontal_scroll(phone)

    phone.goto(f"{stack.base}/dashboard/refunds?status=COMPLETED")
    expect(phone.locator("#refunds .row")).to_have_count(1)
    expect(phone.locator("#refunds")).to_contain_text("2.66 USDC")
    phone.screenshot(path=str(shots / "refunds-list-390x844.png"), full_page=True)
    assert no_horizontal_scroll(phone)


def test_merchant_cancels_a_refund_after_confirming(stack, sessions, page):
    email, key = merchant_with_key(sessions)
    p = over_paid_payment(stack, sessions, key)
    log_in(page, stack, email)
    page.goto(f"{stack.base}/dashboard/payments/{p['short_id']}")
    page.locator(".refund-form input[name=amount]").first.fill("1")
    page.locator(".refund-form").first.get_by_role("button", name="Refund").click()
    page.wait_for_url(re.compile(r"/dashboard/refunds/[0-9a-f-]{36}$"))
    page.locator("#cancel-refund summary").click()
    page.get_by_role("button", name="Cancel refund").click()  # the box is not ticked: nothing sent
    expect(page.locator("#refund-status")).to_have_text("awaiting address")
    page.locator("#cancel-refund input[name=confirm]").check()
    page.get_by_role("button", name="Cancel refund").click()
    expect(page.locator("#refund-status")).to_have_text("canceled")
    expect(page.locator("#cancel-refund")).to_have_count(0)
    page.goto(f"{stack.base}/dashboard/payments/{p['short_id']}")
    expect(page.locator("#payment-refunds")).to_contain_text("canceled")
    expect(page.locator(".refund-form input[name=amount]").first).to_have_value("2.66")  # offered again
