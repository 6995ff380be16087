"""Dashboard products, webhooks (deliveries, redeliver, test), wallets and payment detail,
through the Flask test client on real PostgreSQL."""

from __future__ import annotations

import re
import uuid

import pytest
import sqlalchemy as sa

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.models import ApiKey, Product, Wallet, WebhookDelivery, WebhookEndpoint
from tests.support.api import EVM_FIRST
from tests.support.dashboard import post

# the published test key's first address in test mode: index 1,000,000,000 (test payments' range)


def test_create_a_fiat_product_and_see_its_share_link(dash, sessions, settings):
    r = post(dash, "/dashboard/products", name="Dashboard mug", description="Blue", price="12.50", currency_type="FIAT")
    assert r.status_code == 303
    with sessions() as s:
        product = s.scalars(sa.select(Product).where(Product.name == "Dashboard mug")).one()
    page = dash.get("/dashboard/products").get_data(as_text=True)
    assert f"{settings.checkout_url}/products/{product.id}" in page and "$12.50" in page


def test_invalid_product_forms_are_refused_with_the_api_rules(dash):
    for form in (
        {"name": "", "price": "1"},
        {"name": "X", "price": "0"},
        {"name": "X", "price": "abc"},
        {"name": "X", "price": "1.005"},
        {"name": "X", "price": "5", "currency_type": "CRYPTO"},
    ):
        r = post(dash, "/dashboard/products", **{"currency_type": "FIAT", **form})
        assert r.status_code == 422, form
        assert "form-error" in r.get_data(as_text=True)


def test_edit_deactivate_and_delete_a_product(dash, sessions):
    post(dash, "/dashboard/products", name="Tee", price="20", currency_type="CRYPTO", token="USDC", network="BASE")
    with sessions() as s:
        pid = s.scalars(sa.select(Product.id).where(Product.name == "Tee")).one()
    r = post(dash, f"/dashboard/products/{pid}", name="Tee v2", description="", price="25")  # active unchecked
    assert r.status_code == 303
    with sessions() as s:
        p = s.get(Product, pid)
        assert (p.name, p.price, p.active, p.token) == ("Tee v2", 25, False, "USDC")
    asked = post(dash, f"/dashboard/products/{pid}/delete")  # a destructive action asks first
    assert asked.status_code == 200 and "Delete the product Tee v2?" in asked.get_data(as_text=True)
    assert "Tee v2" in dash.get("/dashboard/products").get_data(as_text=True)
    assert post(dash, f"/dashboard/products/{pid}/delete", confirm="yes").status_code == 303
    assert "Tee v2" not in dash.get("/dashboard/products").get_data(as_text=True)
    assert dash.get(f"/dashboard/products/{pid}").status_code == 404


def test_webhook_secret_is_shown_once_and_test_event_is_queued(dash, sessions):
    r = post(dash, "/dashboard/webhooks", url="http://127.0.0.1:9/hook", events=["payment.completed"])
    assert r.status_code == 201
    secret = re.search(r'id="new-secret" class="value">(whsec_[^<]+)<', r.get_data(as_text=True)).group(1)
    with sessions() as s:
        hook = s.scalars(sa.select(WebhookEndpoint).where(WebhookEndpoint.secret == secret)).one()
    assert hook.events == ["payment.completed"]
    assert secret not in dash.get("/dashboard/webhooks").get_data(as_text=True)
    assert secret not in dash.get(f"/dashboard/webhooks/{hook.id}").get_data(as_text=True)
    assert post(dash, f"/dashboard/webhooks/{hook.id}/test").status_code == 303
    with sessions() as s:
        delivery = s.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.endpoint_id == hook.id)).one()
    assert delivery.event_type == "webhook.test" and delivery.status == "PENDING"
    page = dash.get(f"/dashboard/webhooks/{hook.id}").get_data(as_text=True)
    assert "webhook.test" in page and delivery.event_id in page
    assert post(dash, f"/dashboard/webhooks/{hook.id}/deliveries/{delivery.id}/redeliver").status_code == 303


def test_rotate_disable_and_delete_a_webhook(dash, sessions):
    post(dash, "/dashboard/webhooks", url="http://127.0.0.1:9/other")
    with sessions() as s:
        hook = s.scalars(sa.select(WebhookEndpoint).where(WebhookEndpoint.url == "http://127.0.0.1:9/other")).one()
    asked = post(dash, f"/dashboard/webhooks/{hook.id}/rotate-secret")
    assert "Rotate the signing secret of http://127.0.0.1:9/other?" in asked.get_data(as_text=True)
    with sessions() as s:
        assert s.get(WebhookEndpoint, hook.id).secret == hook.secret  # asking changed nothing
    r = post(dash, f"/dashboard/webhooks/{hook.id}/rotate-secret", confirm="yes")
    assert r.status_code == 200
    with sessions() as s:
        new_secret = s.get(WebhookEndpoint, hook.id).secret
    assert new_secret != hook.secret and new_secret in r.get_data(as_text=True)
    assert post(dash, f"/dashboard/webhooks/{hook.id}/active").status_code == 303
    refused = post(dash, f"/dashboard/webhooks/{hook.id}/test")
    assert refused.status_code == 422 and "disabled" in refused.get_data(as_text=True)
    asked = post(dash, f"/dashboard/webhooks/{hook.id}/delete")
    assert (
        'id="confirm-button"' in asked.get_data(as_text=True)
        and dash.get(f"/dashboard/webhooks/{hook.id}").status_code == 200
    )
    assert post(dash, f"/dashboard/webhooks/{hook.id}/delete", confirm="yes").status_code == 303
    assert dash.get(f"/dashboard/webhooks/{hook.id}").status_code == 404


def test_revoking_a_key_asks_first_then_revokes_it(dash, sessions):
    made = dash.post(
        "/dashboard/keys",
        data={"csrf_token": dash.token, "name": "shop server", "mode": "test", "scopes": ["payments:read"]},
    )
    assert made.status_code == 200
    with sessions() as s:
        key = s.scalars(
            sa.select(ApiKey).where(ApiKey.name == "shop server").order_by(ApiKey.created_at.desc())
        ).first()
    asked = post(dash, f"/dashboard/keys/{key.id}/revoke")
    assert asked.status_code == 200 and f"Revoke the key shop server ({key.prefix})?" in asked.get_data(as_text=True)
    with sessions() as s:
        assert s.get(ApiKey, key.id).revoked_at is None
    assert post(dash, f"/dashboard/keys/{key.id}/revoke", confirm="yes").status_code == 303
    with sessions() as s:
        assert s.get(ApiKey, key.id).revoked_at is not None


def test_wallet_shows_the_first_derived_address_and_refuses_bad_keys(dash, sessions):
    r = post(dash, "/dashboard/wallets", chain="evm", xpub=TEST_XPUBS["evm"])
    assert r.status_code == 200 and EVM_FIRST in r.get_data(as_text=True)
    with sessions() as s:
        assert s.scalars(
            sa.select(Wallet.xpub).where(Wallet.chain == "evm", Wallet.mode == "test", Wallet.xpub == TEST_XPUBS["evm"])
        ).first()
    bad = post(dash, "/dashboard/wallets", chain="bitcoin", xpub="xprv-not-a-key")
    assert bad.status_code == 422 and "form-error" in bad.get_data(as_text=True)


def test_other_merchants_objects_are_not_found(dash, make_merchant, client):
    other = make_merchant()
    pid = client.post("/v1/api/products", json={"name": "Theirs", "price": 1}, headers=other.headers()).json["data"][
        "id"
    ]
    assert dash.get(f"/dashboard/products/{pid}").status_code == 404
    assert post(dash, f"/dashboard/products/{pid}/delete").status_code == 404
    assert dash.get(f"/dashboard/webhooks/{uuid.uuid4()}").status_code == 404


def test_payment_detail_cancels_a_pending_payment(dash, sessions, app):
    from kassa_common.accounts import keys
    from kassa_common.db import unit_of_work
    from kassa_common.models import Merchant

    with unit_of_work(sessions) as s:  # the dashboard's merchant, through its own API key
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", ["payments:create"]).key
    api = app.test_client()
    short_id = api.post(
        "/v1/api/payments", json={"amount": 3, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key}
    ).json["data"]["short_id"]
    detail = dash.get(f"/dashboard/payments/{short_id}").get_data(as_text=True)
    assert "Cancel payment" in detail and 'id="transfers"' in detail
    assert post(dash, f"/dashboard/payments/{short_id}/cancel").status_code == 303
    assert ">canceled<" in dash.get(f"/dashboard/payments/{short_id}").get_data(as_text=True)
    assert post(dash, f"/dashboard/payments/{short_id}/cancel").status_code == 409


@pytest.mark.parametrize(
    "method, path, message",
    [
        ("get", "/dashboard/products/{ref}", "No such product in this mode."),
        ("post", "/dashboard/products/{ref}", "No such product in this mode."),
        ("post", "/dashboard/products/{ref}/delete", "No such product in this mode."),
        ("get", "/dashboard/webhooks/{ref}", "No such webhook in this mode."),
        ("post", "/dashboard/webhooks/{ref}/active", "No such webhook in this mode."),
        ("post", "/dashboard/webhooks/{ref}/test", "No such webhook in this mode."),
        ("post", "/dashboard/webhooks/{ref}/rotate-secret", "No such webhook in this mode."),
        ("post", "/dashboard/webhooks/{ref}/delete", "No such webhook in this mode."),
        ("post", "/dashboard/webhooks/{ref}/deliveries/{ref}/redeliver", "No such delivery."),
        ("get", "/dashboard/payments/{ref}", "No such payment in this mode."),
        ("post", "/dashboard/payments/{ref}/cancel", "No such payment in this mode."),
    ],
)
def test_a_missing_object_gets_a_404_page_saying_what_is_missing(dash, method, path, message):
    url = path.format(ref=uuid.uuid4())
    r = post(dash, url) if method == "post" else dash.get(url)
    assert r.status_code == 404
    assert f"<p>{message}</p>" in r.get_data(as_text=True)


@pytest.mark.parametrize(
    "path",
    ["/dashboard/webhooks/{ref}/no-such-action", "/dashboard/keys/{ref}/revoke", "/dashboard/keys/not-a-key-id/revoke"],
)
def test_an_unknown_action_or_key_gets_the_plain_not_found_page(dash, path):
    r = post(dash, path.format(ref=uuid.uuid4()))
    assert r.status_code == 404
    assert '<h1 class="error-title">Not found</h1>' in r.get_data(as_text=True)
    assert "<p>Not found</p>" in r.get_data(as_text=True)


def test_an_object_of_the_other_mode_is_not_found(dash, sessions):
    post(dash, "/dashboard/products", name="Test-only", price="3", currency_type="FIAT")
    with sessions() as s:
        pid = s.scalars(sa.select(Product.id).where(Product.name == "Test-only")).one()
    assert post(dash, "/dashboard/mode", mode="live", next="/dashboard/products").status_code == 303
    r = dash.get(f"/dashboard/products/{pid}")
    assert r.status_code == 404 and "No such product in this mode." in r.get_data(as_text=True)


def test_canceling_a_canceled_payment_shows_why_on_a_conflict_page(dash, sessions, app):
    from kassa_common.accounts import keys
    from kassa_common.db import unit_of_work
    from kassa_common.models import Merchant

    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", ["payments:create"]).key
    short_id = (
        app.test_client()
        .post("/v1/api/payments", json={"amount": 2, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key})
        .json["data"]["short_id"]
    )
    assert post(dash, f"/dashboard/payments/{short_id}/cancel").status_code == 303
    again = post(dash, f"/dashboard/payments/{short_id}/cancel")
    assert again.status_code == 409
    page = again.get_data(as_text=True)
    assert '<h1 class="error-title">Conflict</h1>' in page and "<p>a CANCELED payment cannot cancel</p>" in page


def test_filtering_payments_by_status_answers_200_with_the_status_selected(dash, sessions, app):
    from kassa_common.accounts import keys
    from kassa_common.db import unit_of_work
    from kassa_common.models import Merchant

    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", ["payments:create"]).key
    api = app.test_client()
    made = [
        api.post(
            "/v1/api/payments", json={"amount": 4, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key}
        ).json["data"]["short_id"]
        for _ in range(2)
    ]
    assert post(dash, f"/dashboard/payments/{made[0]}/cancel").status_code == 303
    r = dash.get("/dashboard/payments?status=CANCELED")
    assert r.status_code == 200
    page = r.get_data(as_text=True)
    assert '<option value="CANCELED" selected>' in page
    assert made[0] in page and made[1] not in page


def test_a_payment_whose_transfer_is_seen_offers_no_cancel_and_refuses_one_with_the_reason(dash, sessions, app):
    from kassa_common.accounts import keys
    from kassa_common.db import unit_of_work
    from kassa_common.models import Merchant
    from kassa_common.statuses import TransferStatus
    from tests.support.transfers import report, settle

    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", ["payments:create"]).key
    p = (
        app.test_client()
        .post("/v1/api/payments", json={"amount": 2, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key})
        .json["data"]
    )
    settle(sessions, report(p, TransferStatus.SEEN, 2_000_000, 1))
    detail = dash.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)
    assert "Cancel payment" not in detail
    assert "Cannot be canceled: a transfer to the payment is seen and waiting for confirmations." in detail
    refused = post(dash, f"/dashboard/payments/{p['short_id']}/cancel")
    assert refused.status_code == 409
    assert "<p>a transfer to the payment is seen and waiting for confirmations</p>" in refused.get_data(as_text=True)
