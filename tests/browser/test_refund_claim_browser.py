"""A customer claims a refund in real Chromium on a phone (390×844) against the running
stack: the claim page, a refused address with its reason, the waiting state, and the
refunded state with the transaction. Screenshots go to pytest's temporary directory (choose
it with ``--basetemp``), never into the repository."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
from playwright.sync_api import expect

from kassa_common.models import Refund
from tests.support.wait import until

GOOD = "0x52908400098527886E0F7030069857D2E4169EE7"


@pytest.fixture
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("refund-claim")


def completed_payment(stack, merchant) -> dict:
    body = {"amount": 12.34, "token": "USDC", "network": "BASE", "customer_email": "jane@example.com"}
    p = requests.post(f"{stack.api}/payments", json=body, headers=merchant.headers(), timeout=5).json()["data"]

    def done():
        got = requests.get(f"{stack.api}/payments/{p['id']}", headers=merchant.headers(), timeout=5).json()["data"]
        return got["status"] == "COMPLETED" and got

    return until(done, 30, message="the test payment completed")


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_customer_claims_a_refund_on_a_phone(stack, make_merchant, sessions, phone, shots):
    merchant = make_merchant(business_name="Corner Coffee Roasters")
    p = completed_payment(stack, merchant)
    r = requests.post(
        f"{stack.api}/payments/{p['id']}/refunds",
        json={"amount": "2.66", "reason": "over-paid"},
        headers=merchant.headers(),
        timeout=5,
    )
    assert r.status_code == 201, r.text
    refund = r.json()["data"]

    phone.goto(refund["claim_url"])
    expect(phone.locator(".merchant")).to_have_text("Refund from Corner Coffee Roasters")
    expect(phone.locator(".amount")).to_contain_text("2.66 USDC")
    expect(phone.locator("#refund-network")).to_have_text("BASE")
    expect(phone.locator("#address")).to_be_visible()
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(shots / "1-claim.png"), full_page=True)

    # a typo in a checksummed address is caught, with the reason, and the input kept
    typo = GOOD[:-1] + "e"
    phone.fill("#address", typo)
    phone.get_by_role("button", name="Claim the refund").click()
    expect(phone.locator("#claim-error")).to_contain_text("EIP-55 checksum")
    expect(phone.locator("#address")).to_have_value(typo)
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(shots / "2-refused.png"), full_page=True)

    phone.fill("#address", "0x" + "00" * 20)
    phone.get_by_role("button", name="Claim the refund").click()
    expect(phone.locator("#claim-error")).to_contain_text("zero address")

    phone.fill("#address", GOOD.lower())
    phone.get_by_role("button", name="Claim the refund").click()
    expect(phone.locator("#refund-status")).to_have_text("Waiting for the merchant")
    expect(phone.locator("#refund-address")).to_have_text(GOOD)
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(shots / "3-waiting.png"), full_page=True)
    shown = requests.get(f"{stack.api}/refunds/{refund['id']}", headers=merchant.headers(), timeout=5).json()["data"]
    assert shown["status"] == "AWAITING_PAYMENT" and shown["address"] == GOOD

    # the payout, as the watcher records it once confirmed
    tx = "0x" + "5e" * 32
    with sessions.begin() as s:
        s.execute(
            sa.update(Refund)
            .where(Refund.id == uuid.UUID(refund["id"]))
            .values(status="COMPLETED", transaction_hash=tx, completed_at=sa.func.now(), confirmations=10)
        )
    phone.reload()
    expect(phone.locator("#refund-status")).to_have_text("Refunded")
    expect(phone.locator("#refund-transaction")).to_have_text(tx)
    expect(phone.locator("#explorer-link")).to_have_attribute("href", f"https://basescan.org/tx/{tx}")
    assert no_horizontal_scroll(phone)
    phone.screenshot(path=str(shots / "4-refunded.png"), full_page=True)
