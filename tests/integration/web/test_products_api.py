"""/products CRUD and paying for a product, against real PostgreSQL."""

from __future__ import annotations

import re
import secrets
import uuid

import pytest

from tests.support.api import API, assert_error, detail_fields

PRODUCT_FIELDS = {
    "id",
    "name",
    "description",
    "price",
    "currency_type",
    "currency",
    "token",
    "network",
    "active",
    "share_link",
    "test_mode",
    "created_at",
    "updated_at",
}


def post(client, merchant, body, mode="test"):
    return client.post(f"{API}/products", json=body, headers=merchant.headers(mode))


def patch(client, merchant, pid, body):
    return client.patch(f"{API}/products/{pid}", json=body, headers=merchant.headers())


def get(client, merchant, pid, mode="test"):
    return client.get(f"{API}/products/{pid}", headers=merchant.headers(mode))


def listing(client, merchant, mode="test", **query):
    r = client.get(f"{API}/products", query_string=query, headers=merchant.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.json


def pay(client, merchant, product_id, token="USDC", network="BASE", mode="test"):
    return client.post(
        f"{API}/payments",
        json={"product_id": product_id, "token": token, "network": network},
        headers=merchant.headers(mode),
    )


def name() -> str:
    return f"Widget {secrets.token_hex(4)}"


# ---- create -------------------------------------------------------------------------------


def test_create_fiat_product(client, merchant, settings):
    body = {"name": name(), "description": "A fine widget", "price": 49.99, "currency_type": "FIAT"}
    r = post(client, merchant, body)
    assert r.status_code == 201 and r.json["success"] is True and r.json["statusCode"] == 201
    p = r.json["data"]
    assert set(p) == PRODUCT_FIELDS
    assert (p["name"], p["description"], p["price"], p["currency_type"]) == (
        body["name"],
        "A fine widget",
        49.99,
        "FIAT",
    )
    assert p["token"] is None and p["network"] is None and p["active"] is True and p["test_mode"] is True
    assert p["share_link"] == f"{settings.checkout_url}/products/{p['id']}"
    assert uuid.UUID(p["id"]) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", p["created_at"])


def test_currency_type_defaults_to_fiat(client, merchant):
    r = post(client, merchant, {"name": name(), "price": 5})
    assert r.status_code == 201 and r.json["data"]["currency_type"] == "FIAT" and r.json["data"]["price"] == 5


def test_create_crypto_product_keeps_exact_token_units(client, merchant):
    raw = (
        f'{{"name": "{name()}", "price": 0.123456789012345678, "currency_type": "CRYPTO", "token": "eth", '
        '"network": "base"}'
    )
    r = client.post(f"{API}/products", data=raw, content_type="application/json", headers=merchant.headers())
    assert r.status_code == 201, r.json
    p = r.json["data"]
    assert (p["token"], p["network"], p["currency_type"]) == ("ETH", "BASE", "CRYPTO")
    assert p["price"] == "0.123456789012345678"


def test_create_inactive_product(client, merchant):
    assert post(client, merchant, {"name": name(), "price": 1, "active": False}).json["data"]["active"] is False


@pytest.mark.parametrize(
    "body, fields",
    [
        ({"currency_type": "CRYPTO"}, {"token", "network"}),
        ({"currency_type": "CRYPTO", "token": "USDC"}, {"network"}),
        ({"currency_type": "CRYPTO", "network": "BASE"}, {"token"}),
        ({"currency_type": "FIAT", "token": "USDC", "network": "BASE"}, {"token"}),
        ({"token": "USDC"}, {"token"}),
        ({"price": 0}, {"price"}),
        ({"price": 0.009}, {"price"}),
        ({"price": -1}, {"price"}),
        ({"price": "10"}, {"price"}),
        ({"price": 10.001}, {"price"}),
        ({"price": None}, {"price"}),
        ({"name": ""}, {"name"}),
        ({"name": None}, {"name"}),
        ({"currency_type": "EUR"}, {"currency_type"}),
        ({"sku": "x"}, {"sku"}),
        ({"active": "yes"}, {"active"}),
        ({"currency_type": "CRYPTO", "token": "USDC", "network": "BASE", "price": 1.0000001}, {"price"}),
    ],
    ids=[
        "crypto without token and network",
        "crypto without network",
        "crypto without token",
        "fiat with token and network",
        "default fiat with token",
        "price zero",
        "price below 0.01",
        "price negative",
        "price as string",
        "fiat price with 3 decimals",
        "price missing",
        "empty name",
        "name missing",
        "unknown currency type",
        "unknown field",
        "active not boolean",
        "crypto price finer than token decimals",
    ],
)
def test_invalid_product_is_validation_error(client, merchant, body, fields):
    base = {"name": name(), "price": 10}
    full = {k: v for k, v in {**base, **body}.items() if v is not None}
    error = assert_error(post(client, merchant, full), 400, "VALIDATION_ERROR")
    assert fields <= detail_fields(error), error


def test_crypto_product_with_unsupported_pair_is_unprocessable(client, merchant):
    r = post(
        client, merchant, {"name": name(), "price": 1, "currency_type": "CRYPTO", "token": "BTC", "network": "BASE"}
    )
    assert_error(r, 422, "UNPROCESSABLE_ENTITY")


def test_live_crypto_product_on_a_network_without_rpc_is_unprocessable(client, merchant):
    r = post(
        client,
        merchant,
        {"name": name(), "price": 1, "currency_type": "CRYPTO", "token": "USDC", "network": "BASE"},
        mode="live",
    )
    assert_error(r, 422, "UNPROCESSABLE_ENTITY")


# ---- get, list ----------------------------------------------------------------------------


def test_get_returns_the_product(client, merchant, create_product):
    p = create_product(merchant)
    r = get(client, merchant, p["id"])
    assert r.status_code == 200 and r.json == {"success": True, "statusCode": 200, "data": p}


def test_unknown_product_is_not_found(client, merchant):
    for ref in (str(uuid.uuid4()), "nope"):
        assert_error(get(client, merchant, ref), 404, "NOT_FOUND")


def test_list_envelope_has_a_data_array_and_meta_beside_it(client, merchant, create_product):
    made = [create_product(merchant) for _ in range(3)]
    body = listing(client, merchant)
    assert set(body) == {"success", "statusCode", "data", "meta"}
    assert body["success"] is True and body["statusCode"] == 200
    assert body["data"] == list(reversed(made))
    assert body["meta"] == {"page": 1, "pageSize": 10, "total": 3, "pages": 1}


def test_list_paginates(client, merchant, create_product):
    made = [create_product(merchant)["id"] for _ in range(5)]
    first, last = listing(client, merchant, pageSize=2), listing(client, merchant, pageSize=2, page=3)
    assert [p["id"] for p in first["data"]] == made[::-1][:2]
    assert [p["id"] for p in last["data"]] == made[:1]
    assert last["meta"] == {"page": 3, "pageSize": 2, "total": 5, "pages": 3}


def test_list_is_per_merchant_and_mode(client, live_merchant, make_merchant, create_product):
    test_product = create_product(live_merchant)
    live_product = create_product(live_merchant, mode="live", currency_type="CRYPTO", token="USDC", network="LOCAL_EVM")
    create_product(make_merchant())
    assert [p["id"] for p in listing(client, live_merchant)["data"]] == [test_product["id"]]
    live = listing(client, live_merchant, mode="live")["data"]
    assert [p["id"] for p in live] == [live_product["id"]] and live[0]["test_mode"] is False


# ---- update -------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(client, merchant, create_product):
    p = create_product(merchant, description="original")
    r = patch(client, merchant, p["id"], {"name": "Renamed"})
    assert r.status_code == 200, r.json
    updated = r.json["data"]
    assert updated["name"] == "Renamed"
    assert {k: updated[k] for k in ("price", "description", "currency_type", "active", "created_at")} == {
        k: p[k] for k in ("price", "description", "currency_type", "active", "created_at")
    }
    assert updated["updated_at"] >= p["updated_at"]
    assert get(client, merchant, p["id"]).json["data"] == updated


def test_patch_empty_body_changes_nothing(client, merchant, create_product):
    p = create_product(merchant)
    updated = patch(client, merchant, p["id"], {}).json["data"]
    assert {k: v for k, v in updated.items() if k != "updated_at"} == {k: v for k, v in p.items() if k != "updated_at"}


def test_patch_can_deactivate_and_change_price(client, merchant, create_product):
    p = create_product(merchant)
    updated = patch(client, merchant, p["id"], {"active": False, "price": 7.5}).json["data"]
    assert updated["active"] is False and updated["price"] == 7.5


def test_patch_null_description_clears_it(client, merchant, create_product):
    p = create_product(merchant, description="to be removed")
    assert patch(client, merchant, p["id"], {"description": None}).json["data"]["description"] is None


@pytest.mark.parametrize(
    "body, fields",
    [
        ({"name": None}, {"name"}),
        ({"price": None}, {"price"}),
        ({"active": None}, {"active"}),
        ({"price": 0.001}, {"price"}),
        ({"currency_type": "CRYPTO"}, {"token", "network"}),
        ({"token": "USDC", "network": "BASE"}, {"token"}),
        ({"unknown": 1}, {"unknown"}),
    ],
    ids=[
        "null name",
        "null price",
        "null active",
        "price too small",
        "crypto without pair",
        "pair on fiat",
        "unknown field",
    ],
)
def test_invalid_patch_is_validation_error_and_changes_nothing(client, merchant, create_product, body, fields):
    p = create_product(merchant)
    error = assert_error(patch(client, merchant, p["id"], body), 400, "VALIDATION_ERROR")
    assert fields <= detail_fields(error), error
    assert get(client, merchant, p["id"]).json["data"] == p


def test_patch_fiat_to_crypto_and_back(client, merchant, create_product):
    p = create_product(merchant, price=25)
    crypto = patch(client, merchant, p["id"], {"currency_type": "CRYPTO", "token": "USDT", "network": "ETHEREUM"})
    assert crypto.status_code == 200, crypto.json
    assert (crypto.json["data"]["token"], crypto.json["data"]["network"], crypto.json["data"]["price"]) == (
        "USDT",
        "ETHEREUM",
        "25",
    )
    fiat = patch(client, merchant, p["id"], {"currency_type": "FIAT"}).json["data"]
    assert fiat["currency_type"] == "FIAT" and fiat["token"] is None and fiat["network"] is None and fiat["price"] == 25


def test_patch_crypto_pair_to_another_supported_pair(client, merchant, create_product):
    p = create_product(merchant, currency_type="CRYPTO", token="USDC", network="BASE", price=3)
    updated = patch(client, merchant, p["id"], {"network": "polygon"}).json["data"]
    assert (updated["token"], updated["network"]) == ("USDC", "POLYGON")
    assert_error(patch(client, merchant, p["id"], {"token": "BTC"}), 422, "UNPROCESSABLE_ENTITY")


def test_patch_unknown_product_is_not_found(client, merchant):
    assert_error(patch(client, merchant, uuid.uuid4(), {"name": "x"}), 404, "NOT_FOUND")


# ---- delete -------------------------------------------------------------------------------


def test_delete_answers_deleted_true_then_the_product_is_gone(client, merchant, create_product):
    keep, gone = create_product(merchant), create_product(merchant)
    r = client.delete(f"{API}/products/{gone['id']}", headers=merchant.headers())
    assert r.status_code == 200 and r.json == {"success": True, "data": {"deleted": True}}
    assert_error(get(client, merchant, gone["id"]), 404, "NOT_FOUND")
    assert [p["id"] for p in listing(client, merchant)["data"]] == [keep["id"]]
    assert listing(client, merchant)["meta"]["total"] == 1


def test_deleted_product_cannot_be_updated_or_deleted_again(client, merchant, create_product):
    p = create_product(merchant)
    client.delete(f"{API}/products/{p['id']}", headers=merchant.headers())
    assert_error(patch(client, merchant, p["id"], {"name": "back"}), 404, "NOT_FOUND")
    assert_error(client.delete(f"{API}/products/{p['id']}", headers=merchant.headers()), 404, "NOT_FOUND")


# ---- paying for a product -----------------------------------------------------------------


def test_payment_for_a_fiat_product_charges_its_price(client, merchant, create_product):
    p = create_product(merchant, price=42.5)
    r = pay(client, merchant, p["id"])
    assert r.status_code == 201, r.json
    assert r.json["data"]["amount"] == 42.5 and r.json["data"]["product_id"] == p["id"]
    assert r.json["data"]["crypto_amount"] == "42.5"


def test_payment_for_a_fiat_product_in_a_volatile_coin_converts_the_price(client, merchant, create_product):
    p = create_product(merchant, price=30)
    r = pay(client, merchant, p["id"], token="ETH", network="ETHEREUM")
    assert r.status_code == 201 and r.json["data"]["amount"] == 30 and r.json["data"]["crypto_amount"] == "0.01"


def test_payment_for_a_crypto_product_charges_its_token_amount(client, merchant, create_product):
    p = create_product(merchant, currency_type="CRYPTO", token="ETH", network="BASE", price=0.5)
    r = pay(client, merchant, p["id"], token="eth", network="base")
    assert r.status_code == 201, r.json
    assert r.json["data"]["crypto_amount"] == "0.5" and r.json["data"]["amount"] == 1500
    assert (r.json["data"]["token"], r.json["data"]["network"]) == ("ETH", "BASE")


@pytest.mark.parametrize("token, network", [("USDC", "BASE"), ("ETH", "ETHEREUM")])
def test_payment_for_a_crypto_product_in_another_pair_is_unprocessable(
    client, merchant, create_product, token, network
):
    p = create_product(merchant, currency_type="CRYPTO", token="ETH", network="BASE", price=0.5)
    assert_error(pay(client, merchant, p["id"], token, network), 422, "UNPROCESSABLE_ENTITY")


def test_payment_for_an_inactive_product_is_unprocessable(client, merchant, create_product):
    p = create_product(merchant)
    patch(client, merchant, p["id"], {"active": False})
    assert "product_id" in detail_fields(assert_error(pay(client, merchant, p["id"]), 422, "UNPROCESSABLE_ENTITY"))


def test_payment_for_a_deleted_product_is_unprocessable(client, merchant, create_product):
    p = create_product(merchant)
    client.delete(f"{API}/products/{p['id']}", headers=merchant.headers())
    assert_error(pay(client, merchant, p["id"]), 422, "UNPROCESSABLE_ENTITY")


def test_payment_for_another_merchants_or_modes_product_is_unprocessable(
    client, live_merchant, make_merchant, create_product
):
    foreign = create_product(make_merchant())
    live = create_product(live_merchant, mode="live")
    assert_error(pay(client, live_merchant, foreign["id"]), 422, "UNPROCESSABLE_ENTITY")
    assert_error(pay(client, live_merchant, live["id"]), 422, "UNPROCESSABLE_ENTITY")


@pytest.mark.parametrize("ref", ["{uuid}", "not-a-uuid"])
def test_payment_for_an_unknown_product_is_unprocessable(client, merchant, ref):
    assert_error(pay(client, merchant, ref.format(uuid=uuid.uuid4())), 422, "UNPROCESSABLE_ENTITY")


def test_reactivated_product_can_be_paid_again(client, merchant, create_product):
    p = create_product(merchant, active=False)
    patch(client, merchant, p["id"], {"active": True})
    assert pay(client, merchant, p["id"]).status_code == 201
