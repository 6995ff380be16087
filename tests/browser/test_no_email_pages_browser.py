"""A server without SMTP_URL sends no email, and its pages say so in Chromium at both sizes:
the forgot-password page points to the operator instead of offering a link that never comes,
and the product page asks for an email without promising a receipt. axe-core finds nothing
serious on either."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

from tests.support.axe import AXE
from tests.support.browser_checkout import create_product
from tests.support.screens import SIZES, looking

pytestmark = pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci (make deps)")


@pytest.fixture(scope="module")
def without_email(base_env, stack_database_url):
    """The stack's pages as a server without SMTP_URL serves them, over real HTTP."""
    from kassa_common.config import Settings
    from kassa_api.app import create_app

    settings = Settings.from_env({**base_env, "DATABASE_URL": stack_database_url})
    assert settings.sender.smtp_url is None
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("size", SIZES)
def test_pages_of_a_server_without_email_promise_none(size, stack, merchant, browser, without_email, screenshots):
    product = create_product(stack, merchant)
    with looking(browser, size, screenshots) as (page, look):
        page.goto(f"{without_email}/dashboard/forgot")
        expect(page.get_by_role("heading", level=1)).to_have_text("Reset your password")
        expect(page.locator("#no-email")).to_contain_text("This server sends no email")
        expect(page.locator("#no-email")).to_contain_text("kassa merchant reset-password")
        expect(page.get_by_role("button", name="Email me a link")).to_have_count(0)
        expect(page.get_by_role("link", name="Back to log in")).to_be_visible()
        look("forgot-without-email")

        page.goto(f"{without_email}/products/{product['id']}")
        expect(page.get_by_label("Your email (optional)")).to_be_visible()
        expect(page.get_by_text("receipt")).to_have_count(0)
        look("product-without-email")
