"""Every dashboard form, posted with two bad values: both problems are shown at once, each
under its field's label and tied to its input for screen readers (``aria-invalid``,
``aria-describedby``), and the other values typed come back in their fields; passwords
and codes never do."""

from __future__ import annotations

import re

import sqlalchemy as sa

from kassa_common.models import Merchant, Wallet
from tests.support.dashboard import PASSWORD, assert_beside, assert_clean, csrf_of, post, signed_in, tag_of, value_of


def test_product_form(dash):
    r = post(
        dash, "/dashboard/products", name="", description="Blue mug", price="abc", currency_type="FIAT", currency="EUR"
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "product-name", "Name")
    assert_beside(page, "product-price", "Price", "number")
    assert "2 fields need a change" in page
    assert value_of(page, "product-description") == "Blue mug" and value_of(page, "product-price") == "abc"
    assert value_of(page, "product-fiat") == "EUR"
    assert_clean(page, "product-description")


def test_product_edit_form(dash, sessions):
    assert post(dash, "/dashboard/products", name="Mug", price="12", currency_type="FIAT").status_code == 303
    page = dash.get("/dashboard/products").get_data(as_text=True)
    ref = re.search(r'href="/dashboard/products/([^"]+)"', page).group(1)
    r = post(dash, f"/dashboard/products/{ref}", name="", description="Bigger mug", price="-3")
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "product-name", "Name")
    assert_beside(page, "product-price", "Price")
    assert value_of(page, "product-description") == "Bigger mug" and value_of(page, "product-price") == "-3"
    assert "checked" not in tag_of(page, "product-active")  # unticked as sent


def test_webhook_endpoint_form(dash):
    r = post(dash, "/dashboard/webhooks", url="not a url", description="x" * 501, events=["payment.completed"])
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "webhook-url", "URL")
    assert_beside(page, "webhook-description", "Description", "500")
    assert value_of(page, "webhook-url") == "not a url"
    assert 'value="payment.completed" checked' in page and 'value="payment.expired" checked' not in page


def test_api_key_form(dash):
    r = post(dash, "/dashboard/keys", name="shop server", mode="staging")
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "key-mode", "Mode must be one of test, live")
    error = re.search(r'id="key-scopes-error">([^<]*)<', page)
    assert error and "Choose at least one scope" in error.group(1)
    assert 'aria-describedby="key-scopes-error"' in page
    assert value_of(page, "key-name") == "shop server"
    assert 'name="scopes" value="payments:read" checked' not in page  # as sent: none ticked
    assert "kassa_test_" not in page  # no key was made


def test_settings_form_reports_every_bad_value(dash):
    r = post(
        dash,
        "/dashboard/settings",
        payment_lifetime="5",
        underpayment_tolerance="9",
        rate_spread_pct="1.5",
        rate_lock_minutes="",
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 400
    assert_beside(page, "payment-lifetime", "Payment lifetime", '"5"')
    assert_beside(page, "underpayment-tolerance", "Underpayment tolerance", '"9"')
    tag = tag_of(page, "payment-lifetime")
    assert "payment-lifetime-hint payment-lifetime-error" in tag  # the hint still describes it
    assert value_of(page, "rate-spread") == "1.5" and value_of(page, "payment-lifetime") == "5"
    assert_clean(page, "rate-spread")
    r = post(
        dash,
        "/dashboard/settings",
        payment_lifetime="60",
        underpayment_tolerance="0",
        rate_spread_pct="11",
        rate_lock_minutes="0",
    )
    page = r.get_data(as_text=True)
    assert_beside(page, "rate-spread", "Rate spread")
    assert_beside(page, "rate-lock", "Rate lock")
    assert value_of(page, "payment-lifetime") == "60"


def test_password_change_form(dash):
    r = post(
        dash,
        "/dashboard/settings/password",
        current_password="wrong-one",
        new_password="short",
        confirm_password="other",
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 400
    assert_beside(page, "current-password", "current password is wrong")
    assert_beside(page, "new-password", "at least 8 characters")
    assert_beside(page, "confirm-password", "do not match")
    for secret in ("wrong-one", "short", "other"):
        assert f'value="{secret}"' not in page
    r = post(
        dash,
        "/dashboard/settings/password",
        current_password=PASSWORD,
        new_password="long-enough-1",
        confirm_password="long-enough-1",
    )
    assert r.status_code == 200 and "Password changed" in r.get_data(as_text=True)


def test_sign_up_form(app, sessions):
    client = app.test_client()
    token = csrf_of(client.get("/dashboard/signup"))
    data = {"csrf_token": token, "email": "not-an-email", "password": "short", "business_name": "Corner Shop"}
    r = client.post("/dashboard/signup", data=data)
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "email", "Not an email address")
    assert_beside(page, "password", "at least 8 characters")
    assert value_of(page, "email") == "not-an-email" and value_of(page, "business_name") == "Corner Shop"
    assert 'value="short"' not in page
    r = client.post(
        "/dashboard/signup", data={**data, "email": "ok@example.com", "password": "", "business_name": "x" * 201}
    )
    page = r.get_data(as_text=True)
    assert_beside(page, "password", "at least 8 characters")
    assert_beside(page, "business_name", "200")
    with sessions() as s:
        assert s.scalar(sa.select(Merchant.id).where(Merchant.email == "ok@example.com")) is None


def test_password_reset_form(app, sessions):
    from kassa_common.accounts import password_reset, stores
    from kassa_common.db import unit_of_work
    from tests.support.dashboard import merchant_with_password

    email = merchant_with_password(sessions)
    secret = app.config.get("SECRET_KEY") or app.secret_key
    with unit_of_work(sessions) as s:
        token = password_reset.make_token(stores.account_by_email(s, email), secret)
    client = app.test_client()
    path = f"/dashboard/reset/{token}"
    r = client.post(
        path, data={"csrf_token": csrf_of(client.get(path)), "password": "short", "confirm_password": "shorter"}
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 400
    assert_beside(page, "password", "at least 8 characters")
    assert_beside(page, "confirm_password", "do not match")
    assert 'value="short' not in page


def test_live_wallet_forms(client, sessions):
    dash = signed_in(client, sessions, mode="live")
    r = post(dash, "/dashboard/wallets", chain="bitcoin", xpub="xpub-not-a-key", password="wrong-pass")
    page = r.get_data(as_text=True)
    assert r.status_code == 403
    assert_beside(page, "xpub-bitcoin")
    assert_beside(page, "confirm-password-bitcoin", "needs your password again")
    assert value_of(page, "xpub-bitcoin") == "xpub-not-a-key"
    assert 'value="wrong-pass"' not in page
    assert_clean(page, "xpub-evm")  # the other chain's form is untouched
    assert value_of(page, "xpub-evm") == "" and 'id="confirm-password-evm-error"' not in page

    r = post(dash, "/dashboard/wallets", chain="evm", settlement_address="0x123", password="wrong-pass")
    page = r.get_data(as_text=True)
    assert r.status_code == 403
    assert_beside(page, "settlement-address")
    assert_beside(page, "confirm-password-settlement", "needs your password again")
    assert value_of(page, "settlement-address") == "0x123"
    assert_clean(page, "xpub-evm")
    with sessions() as s:
        merchant_id = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        assert not s.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant_id)).first()


def test_onboarding_form(client, sessions):
    from kassa_common.accounts import merchants
    from kassa_common.db import unit_of_work
    from tests.support.dashboard import log_in

    email = "no-name-yet@example.com"
    with unit_of_work(sessions) as s:
        merchants.create_merchant(s, email, PASSWORD, None, activate=True)
    log_in(client, email)
    token = csrf_of(client.get("/dashboard/onboarding"))
    r = client.post("/dashboard/onboarding", data={"csrf_token": token, "business_name": "B" * 201})
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    assert_beside(page, "business_name", "up to 200 characters")
    assert value_of(page, "business_name") == "B" * 201
