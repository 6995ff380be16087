"""The public product page a customer opens from a share link, in real Chromium on a phone
and a laptop: it offers only the networks of the product's mode (never a development chain
outside KASSA_ENV=development), starts on a stablecoin, reads right and passes axe-core."""

from __future__ import annotations

import threading

import pytest
import requests
from playwright.sync_api import expect
from werkzeug.serving import make_server

from tests.support.api import set_live_wallet
from tests.support.axe import AXE
from tests.support.browser_checkout import create_product
from tests.support.screens import SIZES, looking, no_horizontal_scroll, open_page

DEV_CHAINS = ("LOCAL_EVM", "LOCAL_EVM_2", "BITCOIN_REGTEST")
PUBLIC_CHAINS = ("ETHEREUM", "BASE", "POLYGON", "ARBITRUM", "OPTIMISM", "BSC", "BITCOIN", "LITECOIN")


@pytest.fixture(scope="module")
def production(base_env, stack_database_url):
    """The same product pages served as a production server serves them (KASSA_ENV=production,
    Base the only network with a node), on the stack's database, over real HTTP."""
    from kassa_common.config import Settings
    from kassa_api.app import create_app

    env = {k: v for k, v in base_env.items() if k not in ("FIXED_RATES_ALLOW_LIVE", "LOCAL_EVM_RPC_URL")}
    settings = Settings.from_env(
        {
            **env,
            "DATABASE_URL": stack_database_url,
            "KASSA_ENV": "production",
            "SECRET_KEY": "p" * 64,
            "BASE_RPC_URL": "http://127.0.0.1:9",  # never called: a product page only lists the network
        }
    )
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def live_product(stack, merchant, name: str) -> dict:
    r = requests.post(
        f"{stack.api}/products", json={"name": name, "price": 5}, headers=merchant.headers("live"), timeout=5
    )
    assert r.status_code == 201, r.text
    return r.json()["data"]


def offered(page) -> tuple[list[str], list[str], str]:
    """The product page's choices: option values, their labels, and the one it starts on."""
    options = page.locator("#pair option")
    return (
        options.evaluate_all("os => os.map(o => o.value)"),
        options.evaluate_all("os => os.map(o => o.textContent.trim())"),
        page.locator("#pair").input_value(),
    )


def chains(values: list[str]) -> set[str]:
    return {v.split(":")[0] for v in values}


def test_a_test_product_on_a_development_stack_offers_every_network_starting_on_a_stablecoin(
    stack, merchant, browser, screenshots
):
    product = create_product(stack, merchant, description="Stoneware, 350 ml. Dishwasher safe.")
    for name, size in SIZES.items():
        context, page = open_page(browser, size)
        try:
            page.goto(product["share_link"])
            expect(page.get_by_role("heading", level=1)).to_have_text("Blue mug")
            expect(page.locator(".test-banner")).to_contain_text("TEST MODE")
            expect(page.locator(".amount")).to_contain_text("$19.99")
            expect(page.get_by_label("Pay with")).to_be_visible()
            expect(page.get_by_label("Email for your receipt (optional)")).to_be_visible()
            values, labels, chosen = offered(page)
            assert chains(values) == set(PUBLIC_CHAINS) | {"LOCAL_EVM", "BITCOIN_REGTEST", "LOCAL_LITECOIN"}
            assert chosen == "ETHEREUM:USDC" and "USDC on Ethereum" in labels
            assert "USDC on Base" in labels and not [label for label in labels if "_" in label]  # people's names
            assert no_horizontal_scroll(page)
            page.screenshot(path=str(screenshots / f"product-test-dev-{name}.png"), full_page=True)
        finally:
            context.close()


def test_a_live_product_offers_only_the_networks_live_payments_can_use(stack, merchant, sessions, browser):
    set_live_wallet(sessions, merchant.id)
    product = live_product(stack, merchant, "Blue mug")
    context, page = open_page(browser, SIZES["390x844"])
    try:
        page.goto(product["share_link"])
        expect(page.locator(".test-banner")).to_have_count(0)
        values, _, chosen = offered(page)
        assert chains(values) == {"LOCAL_EVM"}  # the one network of the test stack with a node
        assert chosen == "LOCAL_EVM:USDC"
    finally:
        context.close()


def test_outside_development_no_development_chain_is_offered(
    stack, merchant, sessions, browser, production, screenshots
):
    set_live_wallet(sessions, merchant.id)
    test_product = create_product(stack, merchant)
    live = live_product(stack, merchant, "Live mug")
    for name, size in SIZES.items():
        context, page = open_page(browser, size)
        try:
            page.goto(f"{production}/products/{test_product['id']}")
            values, _, chosen = offered(page)
            assert chains(values) == set(PUBLIC_CHAINS), values
            assert chosen == "ETHEREUM:USDC"
            page.screenshot(path=str(screenshots / f"product-test-production-{name}.png"), full_page=True)

            page.goto(f"{production}/products/{live['id']}")
            expect(page.get_by_role("heading", level=1)).to_have_text("Live mug")
            values, labels, chosen = offered(page)
            assert values == ["BASE:ETH", "BASE:USDC", "BASE:USDT"], values
            assert chosen == "BASE:USDC" and labels == ["ETH on Base", "USDC on Base", "USDT on Base"]
            assert no_horizontal_scroll(page)
            page.screenshot(path=str(screenshots / f"product-live-production-{name}.png"), full_page=True)
        finally:
            context.close()


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci (make deps)")
def test_axe_finds_no_serious_problem_on_the_product_page(stack, merchant, browser, screenshots):
    fiat = create_product(stack, merchant, description="Stoneware, 350 ml.")
    crypto = create_product(
        stack, merchant, name="Sticker", currency_type="CRYPTO", price=5, token="USDC", network="BASE"
    )
    for size in SIZES:
        with looking(browser, size, screenshots) as (page, look):
            for product, name in ((fiat, "product-fiat"), (crypto, "product-crypto")):
                page.goto(product["share_link"])
                look(name)
                page.get_by_label("Email for your receipt (optional)").fill("not an email@")
                page.evaluate("document.querySelector('#buy-form').noValidate = true")
                page.get_by_role("button", name="Pay", exact=True).click()
                expect(page.get_by_text("Enter one valid email address")).to_be_visible()
                look(f"{name}-refused-email")
            expect(page.locator(".amount")).to_contain_text("5 USDC on Base")


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci (make deps)")
def test_a_live_shop_without_a_wallet_tells_the_shopper_it_cannot_take_payments(stack, merchant, browser, screenshots):
    """The merchant went live before setting a wallet: the shopper reads plain words and whom
    to ask, with no form to fill in for nothing, and never an operator's command."""
    product = live_product(stack, merchant, "Blue mug")
    for size in SIZES:
        with looking(browser, size, screenshots) as (page, look):
            response = page.goto(product["share_link"])
            assert response is not None and response.status == 503
            expect(page.get_by_role("heading", level=1)).to_have_text("Blue mug")
            expect(page.get_by_role("alert")).to_have_text(
                "Acme Ltd cannot take payments right now. Please contact Acme Ltd to pay, or try again later."
            )
            expect(page.get_by_role("button", name="Pay", exact=True)).to_have_count(0)
            assert "wallet" not in page.locator("body").inner_text().lower()
            look("product-cannot-take-payments")
