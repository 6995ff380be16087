"""The public pages through the Flask test client: hosted checkout, its status JSON, the test
buttons, CSRF, product page and the security headers."""

from __future__ import annotations

import re
import uuid

import sqlalchemy as sa

from kassa_common.models import Event, Payment
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT, set_live_wallet
from tests.support.dashboard import csrf_of
from tests.support.transfers import report, settle

HTML = {"Accept": "text/html"}


def hold(sessions, payment_id: str) -> None:
    """Keep a test payment pending: no automatic completion."""
    with sessions.begin() as s:
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(payment_id)).values(test_auto_complete=False))


def test_checkout_shows_amounts_network_warning_address_and_qr(client, merchant, create_payment):
    p = create_payment(merchant)
    r = client.get(f"/pay/{p['short_id']}", headers=HTML)
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and r.mimetype == "text/html"
    assert p["address"] in html and p["crypto_amount"] in html and "$12.34" in html
    assert "Send only <strong>USDC</strong> on <strong>Base</strong>" in html
    assert "<svg" in html and "TEST MODE" in html


def test_checkout_qr_encodes_an_eip681_uri_for_erc20(client, merchant, create_payment):
    p = create_payment(merchant)
    html = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert re.search(
        rf'href="ethereum:0x[0-9a-fA-F]{{40}}@8453/transfer\?address={p["address"]}&amp;uint256=12340000"', html
    ), html


def test_checkout_qr_encodes_eip681_value_for_native_and_bip21_for_bitcoin(client, merchant, create_payment):
    eth = create_payment(merchant, {"amount": 30, "token": "ETH", "network": "BASE"})
    html = client.get(f"/pay/{eth['short_id']}").get_data(as_text=True)
    assert f'href="ethereum:{eth["address"]}@8453?value=10000000000000000"' in html
    btc = create_payment(merchant, {"amount": 60, "token": "BTC", "network": "BITCOIN"})
    html = client.get(f"/pay/{btc['short_id']}").get_data(as_text=True)
    assert f'href="bitcoin:{btc["address"]}?amount=0.001"' in html


def test_status_json_shows_only_what_the_customer_may_see(client, merchant, create_payment):
    p = create_payment(
        merchant,
        {
            "amount": 5,
            "token": "USDC",
            "network": "BASE",
            "metadata": {"order": "secret-1"},
            "customer_email": "buyer@example.com",
            "redirect_url": "https://shop.example/ok",
        },
    )
    r = client.get(f"/pay/{p['short_id']}/status")
    body = r.get_json()
    assert r.status_code == 200 and body["status"] == "PENDING" and body["test_mode"] is True
    assert body["crypto_amount"] == "5" and body["confirmations"] == 0 and body["expires_at"] == p["expires_at"]
    assert body["redirect_url"] is None, "the redirect target is shown only once completed"
    text = r.get_data(as_text=True)
    for hidden in ("secret-1", "buyer@example.com", "metadata", "merchant", p["id"], "customer"):
        assert hidden not in text


def test_unknown_short_id_is_a_404_page(client):
    for path in ("/pay/ZZZZZZZZZZZZ", "/pay/not-an-id"):
        r = client.get(path)
        assert r.status_code == 404 and r.mimetype == "text/html"
        assert "Not found" in r.get_data(as_text=True)
    assert client.get("/pay/ZZZZZZZZZZZZ/status").status_code == 404


def test_unknown_page_path_is_html_for_browsers_and_api_stays_json(client):
    r = client.get("/no/such/page", headers=HTML)
    assert r.status_code == 404 and r.mimetype == "text/html"
    assert client.get(f"{API}/no-such", headers=HTML).mimetype == "application/json"


def test_form_posted_without_its_csrf_token_is_refused(client, merchant, create_payment, sessions):
    p = create_payment(merchant)
    hold(sessions, p["id"])
    client.get(f"/pay/{p['short_id']}")
    for form in ({}, {"csrf_token": "forged"}):
        r = client.post(f"/pay/{p['short_id']}/cancel", data=form)
        assert r.status_code == 403 and r.mimetype == "text/html"
    assert client.get(f"/pay/{p['short_id']}/status").get_json()["status"] == "PENDING"


def test_cancel_goes_through_the_state_machine_and_returns_to_cancel_url(client, merchant, create_payment, sessions):
    p = create_payment(
        merchant, {"amount": 5, "token": "USDC", "network": "BASE", "cancel_url": "https://shop.example/cart"}
    )
    hold(sessions, p["id"])
    page = client.get(f"/pay/{p['short_id']}")
    assert "form-action 'self' https://shop.example" in page.headers["Content-Security-Policy"]
    r = client.post(f"/pay/{p['short_id']}/cancel", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 303 and r.headers["Location"] == "https://shop.example/cart"
    with sessions() as s:
        assert s.get(Payment, uuid.UUID(p["id"])).status == "CANCELED"
        types = s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(p["id"]))).all()
    assert "payment.canceled" in types


def test_test_buttons_only_on_test_payments(client, merchant, live_merchant, create_payment):
    test = create_payment(merchant)
    assert 'data-test-action="pay"' in client.get(f"/pay/{test['short_id']}").get_data(as_text=True)
    live = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    page = client.get(f"/pay/{live['short_id']}")
    html = page.get_data(as_text=True)
    assert "TEST MODE" not in html and "data-test-action" not in html
    r = client.post(f"/pay/{live['short_id']}/test/pay", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 403


def test_pay_button_queues_a_simulated_transfer(client, merchant, create_payment, sessions):
    p = create_payment(merchant)
    hold(sessions, p["id"])
    page = client.get(f"/pay/{p['short_id']}")
    r = client.post(f"/pay/{p['short_id']}/test/pay", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/pay/{p['short_id']}")
    with sessions() as s:
        assert s.get(Payment, uuid.UUID(p["id"])).test_simulated_at is not None


def test_let_it_expire_stops_auto_completion_and_makes_it_due(client, merchant, create_payment, sessions):
    p = create_payment(merchant)
    page = client.get(f"/pay/{p['short_id']}")
    client.post(f"/pay/{p['short_id']}/test/expire", data={"csrf_token": csrf_of(page)})
    with sessions() as s:
        row = s.get(Payment, uuid.UUID(p["id"]))
        assert row.test_auto_complete is False and row.expires_at <= s.scalar(sa.select(sa.func.now()))


def test_every_page_sends_the_security_headers(client, merchant, create_payment, create_product):
    p = create_payment(merchant)
    product = create_product(merchant)
    for path in (
        f"/pay/{p['short_id']}",
        f"/pay/{p['short_id']}/status",
        f"/products/{product['id']}",
        "/pay/ZZZZZZZZZZZZ",
    ):
        r = client.get(path, headers=HTML)
        csp = r.headers["Content-Security-Policy"]
        for part in (
            "default-src 'self'",
            "img-src 'self' data:",
            "style-src 'self'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ):
            assert part in csp, (path, csp)
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        html = r.get_data(as_text=True)
        assert "style=" not in html and not re.search(r"<script(?![^>]*\bsrc=)", html), path


def test_product_page_offers_networks_and_creates_a_payment(client, merchant, create_product):
    product = create_product(merchant, name="Blue mug", description="A mug.", price=19.99)
    page = client.get(f"/products/{product['id']}")
    html = page.get_data(as_text=True)
    assert "Blue mug" in html and "A mug." in html and "$19.99" in html and 'value="BASE:USDC"' in html
    r = client.post(
        f"/products/{product['id']}",
        data={"csrf_token": csrf_of(page), "pair": "BASE:USDC", "email": "buyer@example.com"},
    )
    assert r.status_code == 303 and "/pay/" in r.headers["Location"]
    short_id = r.headers["Location"].rsplit("/", 1)[1]
    got = client.get(f"{API}/payments/{short_id}", headers=merchant.headers()).get_json()["data"]
    assert got["product_id"] == product["id"] and got["amount"] == 19.99
    assert got["customer_email"] == "buyer@example.com" and got["token"] == "USDC"


def test_live_product_offers_only_live_enabled_networks(client, live_merchant, create_product):
    product = create_product(live_merchant, mode="live")
    html = client.get(f"/products/{product['id']}").get_data(as_text=True)
    assert 'value="LOCAL_EVM:USDC"' in html and 'value="BASE:USDC"' not in html


def test_product_page_starts_on_a_stablecoin_and_hides_development_chains_outside_development(
    settings, engine, merchant, create_product
):
    from kassa_api.app import create_app

    product = create_product(merchant)
    options = re.compile(r'<option value="([A-Z_0-9]+:[A-Z]+)"( selected)?>([^<]+)</option>')
    for development in (True, False):
        app = create_app(
            settings.with_(kassa_env="development" if development else "production", web={"secret_key": "s" * 64}),
            engine=engine,
        )
        shown = options.findall(app.test_client().get(f"/products/{product['id']}").get_data(as_text=True))
        values = [value for value, _, _ in shown]
        assert [value for value, selected, _ in shown if selected] == ["ETHEREUM:USDC"]
        assert "USDC on Ethereum" in [label for _, _, label in shown]
        assert ("LOCAL_EVM:USDC" in values) is development and ("BITCOIN_REGTEST:BTC" in values) is development
        assert "BASE:USDC" in values


def test_inactive_deleted_and_unknown_products_make_no_payment(client, merchant, create_product):
    inactive = create_product(merchant, active=False)
    gone = create_product(merchant)
    assert client.delete(f"{API}/products/{gone['id']}", headers=merchant.headers()).status_code in (200, 204)
    for product in (inactive, gone):
        r = client.get(f"/products/{product['id']}")
        assert r.status_code == 410 and "no longer available" in r.get_data(as_text=True)
    assert client.get(f"/products/{uuid.uuid4()}").status_code == 404
    with client.session_transaction() as sess:
        sess["_csrf"] = "t"
    r = client.post(f"/products/{inactive['id']}", data={"csrf_token": "t", "pair": "BASE:USDC"})
    assert r.status_code == 410
    listed = client.get(f"{API}/payments", headers=merchant.headers()).get_json()
    assert listed["data"]["meta"]["total"] == 0, listed


def test_after_a_partial_payment_the_qr_code_and_amount_ask_for_what_is_still_due(
    client, merchant, create_payment, sessions
):
    p = create_payment(merchant, {"amount": 10, "token": "USDC", "network": "BASE"})
    hold(sessions, p["id"])
    settle(sessions, report(p, TransferStatus.CONFIRMED, 4_000_000, 10))
    html = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert f'address={p["address"]}&amp;uint256=6000000"' in html
    assert '<code id="amount-value" class="value">6</code>' in html and '<span id="crypto-amount">6</span>' in html
    assert "still due (received 4 of 10 USDC; order total ≈ $10.00 USD)" in html
    btc = create_payment(merchant, {"amount": 60, "token": "BTC", "network": "BITCOIN"})
    hold(sessions, btc["id"])
    settle(sessions, report(btc, TransferStatus.CONFIRMED, 25_000, 6))
    assert f'href="bitcoin:{btc["address"]}?amount=0.00075"' in client.get(f"/pay/{btc['short_id']}").get_data(
        as_text=True
    )


def test_while_a_transfer_is_seen_the_checkout_offers_no_cancel_and_says_why_it_refuses(
    client, merchant, create_payment, sessions
):
    p = create_payment(merchant)
    hold(sessions, p["id"])
    opened = client.get(f"/pay/{p['short_id']}")  # the customer's tab, opened before paying
    assert 'id="cancel-form"' in opened.get_data(as_text=True)
    settle(sessions, report(p, TransferStatus.SEEN, 12_340_000, 1))
    assert 'id="cancel-form"' not in client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert client.get(f"/pay/{p['short_id']}/status").get_json()["cancelable"] is False
    refused = client.post(f"/pay/{p['short_id']}/cancel", data={"csrf_token": csrf_of(opened)})
    assert refused.status_code == 409 and refused.mimetype == "text/html"
    assert "has been seen on the chain, so the payment can no longer be canceled" in refused.get_data(as_text=True)
    assert client.get(f"/pay/{p['short_id']}/status").get_json()["status"] == "PENDING"


def test_payments_started_from_one_address_are_rate_limited_with_a_page_saying_when(
    settings, engine, merchant, create_product
):
    """The product page is public: one client address may start PUBLIC_CREATE_PER_MINUTE
    payments a minute; behind TRUSTED_PROXIES the address is the one the proxy saw."""
    from kassa_api.app import create_app

    client = create_app(
        settings.with_(web={"public_create_per_minute": 2, "trusted_proxies": 1}), engine=engine
    ).test_client()
    product = create_product(merchant, name="Blue mug", price=19.99)
    page = client.get(f"/products/{product['id']}")

    def buy(ip: str):
        return client.post(
            f"/products/{product['id']}",
            data={"csrf_token": csrf_of(page), "pair": "BASE:USDC"},
            headers={"X-Forwarded-For": ip},
        )

    assert [buy("203.0.113.7").status_code for _ in range(2)] == [303, 303]
    refused = buy("203.0.113.7")
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= 61
    assert "Too many payments were started from your address" in refused.get_data(as_text=True)
    assert buy("203.0.113.8").status_code == 303  # another customer is not affected


def settled_payment(client, merchant, create_payment, sessions, units: int, body=None, mode: str = "test") -> dict:
    p = create_payment(merchant, body or {"amount": 10, "token": "USDC", "network": "BASE"}, mode=mode)
    hold(sessions, p["id"])
    if units:
        settle(sessions, report(p, TransferStatus.CONFIRMED, units, 12, tx="test_tx_" + "ab" * 16))
    return p


def test_a_completed_payment_is_rendered_complete_with_what_arrived_and_where_to_go_next(
    client, merchant, create_payment, sessions
):
    body = {"amount": 10, "token": "USDC", "network": "BASE", "redirect_url": "https://shop.example/thanks"}
    p = settled_payment(client, merchant, create_payment, sessions, 10_000_000, body)
    html = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert "Loading status" not in html
    assert 'data-state="completed"' in html and "Payment complete. Thank you!" in html
    assert (
        '<span id="crypto-amount">10</span> USDC' in html and ">0</span>" not in html
    )  # what was paid, not what is due
    assert "10 USDC arrived on Base" in html and "test_tx_abab" in html  # a simulated transfer: no explorer link
    assert 'id="back-to-merchant" class="btn btn-primary" href="https://shop.example/thanks"' in html
    assert f'href="/pay/{p["short_id"]}/receipt"' in html
    assert "data-test-action" not in html and "nothing left to simulate" in html
    assert 'id="address"' not in html and 'id="cancel-form"' not in html  # nothing more to send


def test_partial_expired_and_canceled_payments_each_say_what_arrived_and_what_next(
    client, merchant, create_payment, sessions
):
    part = settled_payment(client, merchant, create_payment, sessions, 4_000_000)
    html = client.get(f"/pay/{part['short_id']}").get_data(as_text=True)
    assert "Partially paid" in html and "Received 4 USDC. Send the remaining 6 USDC" in html
    assert "test_tx_abab" in html and 'id="open-wallet"' in html and "data-test-action" in html

    expired = settled_payment(client, merchant, create_payment, sessions, 4_000_000)
    with sessions.begin() as s:
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(expired["id"])).values(status="EXPIRED"))
    html = client.get(f"/pay/{expired['short_id']}").get_data(as_text=True)
    assert "This payment has expired" in html and "4 of 10 USDC arrived before it expired" in html
    assert f"payment reference {expired['short_id']}" in html and 'id="address"' not in html

    canceled = create_payment(
        merchant, {"amount": 10, "token": "USDC", "network": "BASE", "cancel_url": "https://shop.example/cart"}
    )
    hold(sessions, canceled["id"])
    opened = client.get(f"/pay/{canceled['short_id']}")
    client.post(f"/pay/{canceled['short_id']}/cancel", data={"csrf_token": csrf_of(opened)})
    html = client.get(f"/pay/{canceled['short_id']}").get_data(as_text=True)
    assert "This payment was canceled" in html and "Nothing was paid" in html
    assert 'id="back-to-merchant" class="btn btn-primary" href="https://shop.example/cart"' in html
    assert "/receipt" not in html


def test_a_live_transfer_links_to_the_networks_explorer(client, live_merchant, create_payment, sessions):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    hold(sessions, p["id"])
    with sessions.begin() as s:  # as if paid on BASE, which has a public explorer (the local chain has none)
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(p["id"])).values(network="BASE"))
    tx = "0x" + "cd" * 32
    settle(sessions, report({**p, "network": "BASE"}, TransferStatus.CONFIRMED, 12_340_000, 12, tx=tx))
    html = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert f'href="https://basescan.org/tx/{tx}"' in html and "Payment complete" in html
    receipt = client.get(f"/pay/{p['short_id']}/receipt").get_data(as_text=True)
    assert f'href="https://basescan.org/tx/{tx}"' in receipt


def test_the_receipt_of_a_completed_payment_and_none_for_the_others(client, merchant, create_payment, sessions):
    p = settled_payment(client, merchant, create_payment, sessions, 10_000_000)
    r = client.get(f"/pay/{p['short_id']}/receipt")
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and r.mimetype == "text/html"
    assert "Receipt from" in html and "$10.00 USD" in html and "10 USDC" in html
    assert "1 USDC = $1.00 USD" in html and "Base" in html and "test_tx_abab" in html
    assert p["short_id"] in html and "@media print" not in html  # the print rules live in the stylesheet
    open_one = create_payment(merchant)
    r = client.get(f"/pay/{open_one['short_id']}/receipt")
    assert r.status_code == 404 and "A receipt exists once a payment is complete" in r.get_data(as_text=True)
    assert client.get("/pay/NOSUCHID/receipt").status_code == 404


def test_the_open_in_wallet_button_carries_the_same_uri_as_the_qr_code(client, merchant, create_payment):
    btc = create_payment(merchant, {"amount": 60, "token": "BTC", "network": "BITCOIN"})
    html = client.get(f"/pay/{btc['short_id']}").get_data(as_text=True)
    uri = f"bitcoin:{btc['address']}?amount=0.001"
    assert f'<a id="open-wallet" class="btn btn-primary" href="{uri}">Open in wallet</a>' in html
    assert f'<a href="{uri}" aria-label="Open in a wallet app">' in html


def test_a_live_shop_without_a_wallet_tells_the_shopper_in_plain_words(client, merchant, create_product):
    """A merchant went live with no wallet: the shopper reads that the shop cannot take the
    payment now and whom to ask, never the operator's error with its command; the API keeps
    its documented error for the merchant's developer."""
    product = create_product(merchant, mode="live", name="Blue mug")
    page = client.get(f"/products/{product['id']}")
    html = page.get_data(as_text=True)
    assert page.status_code == 503 and "Blue mug" in html
    assert "cannot take payments right now" in html and "Acme Ltd" in html
    assert "wallet" not in html.lower() and "kassa " not in html and 'id="buy-form"' not in html
    with client.session_transaction() as sess:
        sess["_csrf"] = "t"
    r = client.post(f"/products/{product['id']}", data={"csrf_token": "t", "pair": "LOCAL_EVM:USDC"})
    html = r.get_data(as_text=True)
    assert r.status_code == 503 and "cannot take payments right now" in html and "Nothing was charged" in html
    assert "wallet" not in html.lower() and "kassa " not in html
    api = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers=merchant.headers("live"))
    assert api.status_code == 422 and "kassa wallet set" in api.get_json()["error"]["message"]
    listed = client.get(f"{API}/payments", headers=merchant.headers("live")).get_json()
    assert listed["data"]["meta"]["total"] == 0


def test_a_live_crypto_product_without_a_wallet_cannot_be_bought_and_with_one_can(
    client, merchant, sessions, create_product
):
    product = create_product(merchant, mode="live", currency_type="CRYPTO", price=5, token="USDC", network="LOCAL_EVM")
    r = client.get(f"/products/{product['id']}")
    assert r.status_code == 503 and "cannot take payments right now" in r.get_data(as_text=True)
    set_live_wallet(sessions, merchant.id)
    r = client.get(f"/products/{product['id']}")
    assert r.status_code == 200 and 'id="buy-form"' in r.get_data(as_text=True)


def test_the_browser_wallet_button_carries_exactly_what_is_due_on_live_evm_payments_only(
    client, merchant, live_merchant, create_payment
):
    live = create_payment(live_merchant, mode="live")  # 12.34 USDC on LOCAL_EVM
    html = client.get(f"/pay/{live['short_id']}").get_data(as_text=True)
    assert 'id="wallet-pay"' in html and 'data-units="12340000"' in html and "pages/wallet_pay.js" in html
    assert f'data-to="{live["address"]}"' in html and 'data-chain-id="31337"' in html
    assert re.search(r'data-token="0x[0-9a-fA-F]{40}"', html)
    simulated = create_payment(merchant)  # a test payment moves no funds: nothing to send
    assert 'id="wallet-pay"' not in client.get(f"/pay/{simulated['short_id']}").get_data(as_text=True)


def test_error_pages_lead_back_and_the_favicon_is_served(client):
    came = client.get("/pay/NOSUCHPAY1", headers={"Referer": "https://shop.example/cart"})
    html = came.get_data(as_text=True)
    assert came.status_code == 404 and 'href="https://shop.example/cart"' in html and "Back to shop.example" in html
    hostile = client.get("/pay/NOSUCHPAY1", headers={"Referer": "javascript:alert(1)"}).get_data(as_text=True)
    assert "javascript:" not in hostile and 'id="way-back-hint"' in hostile
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"


def test_without_javascript_the_checkout_claims_no_live_updates_and_hides_its_copy_buttons(
    client, merchant, create_payment
):
    p = create_payment(merchant)
    html = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    detail = re.search(r'<p id="status-detail"[^>]*>([^<]*)</p>', html).group(1)
    assert "updates by itself" not in detail and "reload this page" in detail
    assert all(" hidden>" in b for b in re.findall(r"<button[^>]*data-copy[^>]*>", html))
    assert '<details id="cancel-payment"' in html and "Yes, cancel the payment" in html
