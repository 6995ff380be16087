"""Every dashboard page of a merchant with something on each (payments, a refund, products,
a webhook endpoint whose deliveries fail, API keys), in real Chromium on a 390×844 phone and
a 1280×800 laptop: each shows its heading and labelled fields, fits the screen, and axe-core
finds no serious accessibility problem on it, the confirmation pages of destructive actions
included. The screenshots are saved in tests/artifacts/screens to be looked at."""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass

import pytest
import requests
import sqlalchemy as sa
from playwright.sync_api import expect

from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Payment, WebhookEndpoint
from tests.support.browser_dashboard import PASSWORD, log_in, over_paid_payment
from tests.support.screens import SIZES, fields, looking
from tests.support.stack import free_port
from tests.support.wait import until

REFUSING = f"http://127.0.0.1:{free_port()}/hooks/kassa"  # a port nothing listens on: every delivery fails


@dataclass
class Shop:
    email: str
    key: str
    customer_payment: dict
    paid_payment: dict
    refund: dict
    product: dict
    webhook: dict


def api(stack, key: str, method: str, path: str, body: dict | None = None) -> dict:
    r = requests.request(method, f"{stack.api}{path}", json=body, headers={"X-Api-Key": key}, timeout=5)
    assert r.status_code in (200, 201), r.text
    return r.json()["data"]


@pytest.fixture(scope="module")
def shop(stack, sessions) -> Shop:
    """A test-mode shop with a pending payment of a named customer, an over-paid one being
    refunded, two products, and a webhook endpoint that has been failing."""
    email = f"screens-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, email, PASSWORD, "Corner Shop", activate=True)
        key = keys.create_key(s, m.id, "test", list(keys.SCOPES), name="Shop server").key
        keys.create_key(s, m.id, "test", ["payments:read"], name="Reporting")
    webhook = api(stack, key, "POST", "/webhooks", {"url": REFUSING, "description": "order fulfilment"})
    customer_payment = api(
        stack,
        key,
        "POST",
        "/payments",
        {
            "amount": 42.5,
            "token": "USDC",
            "network": "BASE",
            "customer_name": "Ada Lovelace",
            "customer_email": "ada@example.com",
            "metadata": {"order_id": "ORD-1042", "sku": "mug-blue"},
        },
    )
    with unit_of_work(sessions) as s:  # it stays open, as a customer's would
        s.execute(
            sa.update(Payment).where(Payment.id == uuid.UUID(customer_payment["id"])).values(test_auto_complete=False)
        )
    paid = over_paid_payment(stack, sessions, key)
    refund = api(stack, key, "POST", f"/payments/{paid['id']}/refunds", {"amount": "2.66", "reason": "paid too much"})
    product = api(
        stack, key, "POST", "/products", {"name": "Blue mug", "description": "Stoneware, 350 ml.", "price": 19.99}
    )
    api(
        stack,
        key,
        "POST",
        "/products",
        {"name": "Sticker", "price": 5, "currency_type": "CRYPTO", "token": "USDC", "network": "BASE"},
    )

    def failing() -> bool:
        with sessions() as s:
            return (
                s.scalar(sa.select(WebhookEndpoint.failing_since).where(WebhookEndpoint.id == uuid.UUID(webhook["id"])))
                is not None
            )

    until(failing, 60, message="the endpoint's deliveries to fail")
    return Shop(email, key, customer_payment, paid, refund, product, webhook)


def heading(page, text: str | re.Pattern) -> None:
    expect(page.get_by_role("heading", level=1)).to_have_text(text)


@pytest.mark.parametrize("size", SIZES)
def test_every_dashboard_page_reads_right(size, stack, shop, browser, screenshots):
    base = f"{stack.base}/dashboard"
    with looking(browser, size, screenshots) as (page, look):
        log_in(page, stack, shop.email)
        heading(page, "Overview")
        expect(page.get_by_role("heading", name="Payments by status")).to_be_visible()
        expect(page.locator("#recent .row")).to_have_count(2)
        expect(page.get_by_role("img", name=re.compile("Completed volume per day"))).to_be_visible()
        look("dashboard-overview")

        page.get_by_role("link", name="Payments", exact=True).click()
        heading(page, "Payments")
        fields(page, "Status", "Search", "From", "To")
        expect(page.locator(".payment-row")).to_have_count(2)
        expect(page.locator(".payment-row", has_text="Ada Lovelace")).to_contain_text("order ORD-1042")
        look("dashboard-payments")

        page.get_by_role("link", name=shop.customer_payment["short_id"]).click()
        heading(page, f"Payment {shop.customer_payment['short_id']}")
        expect(page.locator("#customer")).to_contain_text("Ada Lovelace")
        expect(page.locator("#metadata dt")).to_have_text(["order_id", "sku"])
        expect(page.locator("#crypto-due")).to_have_text("42.5 USDC")
        look("dashboard-payment")

        page.goto(f"{base}/payments/{shop.paid_payment['short_id']}")
        heading(page, f"Payment {shop.paid_payment['short_id']}")
        expect(page.locator("#payment-refunds")).to_contain_text("2.66 USDC")
        expect(page.locator("#payment-refunds")).to_contain_text("awaiting address")
        look("dashboard-payment-refunded")

        page.get_by_role("link", name="Refunds", exact=True).click()
        heading(page, "Refunds")
        fields(page, "Status")
        expect(page.locator("#refunds .row")).to_have_count(1)
        look("dashboard-refunds")
        page.locator("#refunds a").first.click()
        heading(page, "Refund of 2.66 USDC")
        expect(page.locator("#refund-status")).to_have_text("awaiting address")
        expect(page.locator("#claim-url")).to_contain_text("/refunds/")
        look("dashboard-refund")

        page.get_by_role("link", name="Products", exact=True).click()
        heading(page, "Products")
        fields(page, "Name", "Description", "Price", "Priced in")
        expect(page.locator("#products .row")).to_have_count(2)
        expect(page.locator("#products")).to_contain_text("Sticker · 5 USDC on Base")
        look("dashboard-products")
        page.get_by_role("link", name="Blue mug").click()
        heading(page, "Blue mug")
        fields(page, "Name", "Description", "Price (USD)")
        look("dashboard-product")
        page.get_by_role("button", name="Delete product").click()
        heading(page, re.compile("Delete"))
        expect(page.locator("#confirm-button")).to_be_visible()
        look("dashboard-product-delete-confirm")
        page.get_by_role("link", name="Keep it").click()
        heading(page, "Blue mug")

        page.get_by_role("link", name="Webhooks", exact=True).click()
        heading(page, "Webhooks")
        fields(page, "Endpoint URL", "Description")
        expect(page.locator("#webhooks .row")).to_contain_text("failing")
        look("dashboard-webhooks")
        page.get_by_role("link", name=REFUSING).click()
        heading(page, "Webhook endpoint")
        expect(page.locator("#health")).to_contain_text("failing")
        expect(page.locator("#deliveries")).to_contain_text("your server refused the connection")
        assert "Errno" not in page.locator("#deliveries").inner_text()  # said in words, not the socket's
        first = page.locator("#deliveries > li").first
        expect(first.locator(".delivery-last")).to_contain_text("Last attempt")
        expect(first.locator(".attempts li").first).to_be_hidden()  # every attempt, folded away
        look("dashboard-webhook")
        for button, name in (("Rotate secret", "rotate"), ("Delete endpoint", "delete")):
            page.get_by_role("button", name=button).click()
            expect(page.locator("#confirm-question")).to_be_visible()
            look(f"dashboard-webhook-{name}-confirm")
            page.get_by_role("link", name="Keep it").click()
            heading(page, "Webhook endpoint")

        page.get_by_role("link", name="API keys").click()
        heading(page, "API keys")
        fields(page, "Name", "Mode")
        expect(page.get_by_text("Shop server")).to_be_visible()
        look("dashboard-keys")
        page.get_by_role("button", name="Revoke").last.click()
        expect(page.locator("#confirm-question")).to_be_visible()
        look("dashboard-key-revoke-confirm")

        page.goto(f"{base}/wallets")
        heading(page, "Wallets (test mode)")
        expect(page.get_by_label("Extended public key")).to_have_count(3)  # EVM, Bitcoin and Litecoin
        look("dashboard-wallets")

        for path, title in (
            ("events", "Events"),
            ("sweeps", "Sweeps"),
            ("notifications", "Email notifications"),
            ("settings/2fa", re.compile("Two-factor")),
        ):
            page.goto(f"{base}/{path}")
            heading(page, title)
            look(f"dashboard-{path.replace('/', '-')}")
