"""Every error of DESIGN.md section 3, in the one envelope, through the real app on real
PostgreSQL (and Redis for the shared rate limit)."""

from __future__ import annotations

import json
import secrets
import uuid

import pytest
import sqlalchemy as sa

from kassa_common import audit
from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment
from kassa_api.app import create_app
from tests.support.api import API, LIVE_PAYMENT, PAYMENT, assert_error, detail_fields, new_key

SCOPES = list(keys.SCOPES)
ENDPOINTS = [  # SPEC.md section 4, plus rotate-secret (DESIGN.md section 3)
    ("POST", "/payments", "payments:create"),
    ("GET", "/payments/{id}", "payments:read"),
    ("GET", "/payments", "payments:read"),
    ("POST", "/payments/{id}/cancel", "payments:create"),
    ("POST", "/products", "products:manage"),
    ("GET", "/products", "products:manage"),
    ("GET", "/products/{id}", "products:manage"),
    ("PATCH", "/products/{id}", "products:manage"),
    ("DELETE", "/products/{id}", "products:manage"),
    ("POST", "/webhooks", "webhooks:manage"),
    ("GET", "/webhooks", "webhooks:manage"),
    ("GET", "/webhooks/{id}", "webhooks:manage"),
    ("PATCH", "/webhooks/{id}", "webhooks:manage"),
    ("DELETE", "/webhooks/{id}", "webhooks:manage"),
    ("POST", "/webhooks/{id}/rotate-secret", "webhooks:manage"),
    ("GET", "/webhooks/{id}/deliveries", "webhooks:manage"),
    ("POST", "/webhooks/{id}/deliveries/{id}/redeliver", "webhooks:manage"),
    ("POST", "/webhooks/{id}/test", "webhooks:manage"),
]


def call(client, method: str, path: str, key: str | None = None, **kwargs):
    headers = kwargs.pop("headers", {})
    if key is not None:
        headers["X-Api-Key"] = key
    return client.open(f"{API}{path}", method=method, headers=headers, **kwargs)


def post_payment(client, merchant, body, mode="test"):
    return client.post(f"{API}/payments", json=body, headers=merchant.headers(mode))


# ---- BAD_REQUEST --------------------------------------------------------------------------


def test_malformed_json_is_bad_request(client, merchant):
    r = client.post(
        f"{API}/payments", data='{"amount": 1,', content_type="application/json", headers=merchant.headers()
    )
    assert "JSON" in assert_error(r, 400, "BAD_REQUEST")["message"]


@pytest.mark.parametrize("raw", ["[1, 2]", '"a string"', "42", "null"])
def test_body_that_is_not_an_object_is_bad_request(client, merchant, raw):
    r = client.post(f"{API}/payments", data=raw, content_type="application/json", headers=merchant.headers())
    assert_error(r, 400, "BAD_REQUEST")


def test_empty_body_is_bad_request(client, merchant):
    r = client.post(f"{API}/payments", data="", content_type="application/json", headers=merchant.headers())
    assert_error(r, 400, "BAD_REQUEST")


@pytest.mark.parametrize(
    "raw",
    [
        '{"amount": NaN, "token": "USDC", "network": "BASE"}',
        '{"amount": 5, "token": "USDC", "network": "BASE", "metadata": {"x": Infinity}}',
    ],
)
def test_non_standard_json_constants_are_bad_request(client, merchant, raw):
    r = client.post(f"{API}/payments", data=raw, content_type="application/json", headers=merchant.headers())
    assert_error(r, 400, "BAD_REQUEST")


def test_deeply_nested_json_is_a_client_error(client, merchant):
    raw = '{"metadata": ' + "[" * 30_000 + "]" * 30_000 + "}"
    r = client.post(f"{API}/payments", data=raw, content_type="application/json", headers=merchant.headers())
    # Refused by the JSON parser, or (where the recursion limit allows parsing it) by validation.
    assert r.status_code == 400 and r.json["error"]["code"] in ("BAD_REQUEST", "VALIDATION_ERROR")
    assert_error(r, 400, r.json["error"]["code"])


@pytest.mark.parametrize(
    "query, field",
    [
        ("page=0", "page"),
        ("pageSize=101", "pageSize"),
        ("pageSize=0", "pageSize"),
        ("page=abc", "page"),
        ("status=PAID", "status"),
        ("sort=asc", "sort"),
    ],
)
def test_bad_query_is_bad_request_naming_the_parameter(client, merchant, query, field):
    r = client.get(f"{API}/payments?{query}", headers=merchant.headers())
    assert field in detail_fields(assert_error(r, 400, "BAD_REQUEST"))


@pytest.mark.parametrize("path", ["/products?pageSize=101", "/webhooks?page=0"])
def test_bad_query_on_product_and_webhook_lists_is_bad_request(client, merchant, path):
    assert_error(client.get(f"{API}{path}", headers=merchant.headers()), 400, "BAD_REQUEST")


# ---- VALIDATION_ERROR ---------------------------------------------------------------------

INVALID_PAYMENT_BODIES = {
    "amount below 0.01": ({"amount": 0.009}, {"amount"}),
    "amount zero": ({"amount": 0}, {"amount"}),
    "amount negative": ({"amount": -5}, {"amount"}),
    "amount with 3 decimals": ({"amount": 10.123}, {"amount"}),
    "amount as string": ({"amount": "10.00"}, {"amount"}),
    "amount as boolean": ({"amount": True}, {"amount"}),
    "amount too large": ({"amount": 10_000_000_000}, {"amount"}),
    "token missing": ({"token": None}, {"token"}),
    "network empty": ({"network": ""}, {"network"}),
    "both amount and product_id": ({"product_id": "3b241101-e2bb-4255-8caf-4136c566a962"}, {"amount", "product_id"}),
    "neither amount nor product_id": ({"amount": None}, {"amount", "product_id"}),
    "empty product_id": ({"amount": None, "product_id": ""}, {"product_id"}),
    "unknown field": ({"colour": "red"}, {"colour"}),
    "bad email": ({"customer_email": "not-an-email"}, {"customer_email"}),
    "email not a string": ({"customer_email": 7}, {"customer_email"}),
    "ftp redirect_url": ({"redirect_url": "ftp://example.com/x"}, {"redirect_url"}),
    "relative cancel_url": ({"cancel_url": "example.com/cancel"}, {"cancel_url"}),
    "broken IPv6 URL": ({"redirect_url": "http://[::1/x"}, {"redirect_url"}),
    "URL port out of range": ({"redirect_url": "https://example.com:99999/x"}, {"redirect_url"}),
    "URL port zero": ({"cancel_url": "https://example.com:0/x"}, {"cancel_url"}),
    "metadata with 51 keys": ({"metadata": {f"k{i}": i for i in range(51)}}, {"metadata"}),
    "metadata nested object": ({"metadata": {"nested": {"a": 1}}}, {"metadata.nested"}),
    "metadata not an object": ({"metadata": ["a"]}, {"metadata"}),
    "metadata value too long": ({"metadata": {"k": "v" * 501}}, {"metadata.k"}),
    "metadata key too long": ({"metadata": {"k" * 41: "v"}}, {"metadata"}),  # the message names the key
    "NUL in a string": ({"customer_name": "nul\u0000byte"}, {"customer_name"}),
    "NUL in metadata": ({"metadata": {"k": "nul\u0000byte"}}, {"metadata.k"}),
}


@pytest.mark.parametrize("change, fields", INVALID_PAYMENT_BODIES.values(), ids=INVALID_PAYMENT_BODIES.keys())
def test_invalid_payment_body_is_validation_error_naming_each_field(client, merchant, change, fields):
    body = {k: v for k, v in {**PAYMENT, **change}.items() if not (v is None and k in ("token", "amount"))}
    error = assert_error(post_payment(client, merchant, body), 400, "VALIDATION_ERROR")
    assert fields <= detail_fields(error), error
    assert all(d.get("message") for d in error["details"])


def test_metadata_number_beyond_float_range_is_validation_error(client, merchant):
    r = client.post(
        f"{API}/payments",
        data='{"amount": 5, "token": "USDC", "network": "BASE", "metadata": {"k": 1e400}}',
        content_type="application/json",
        headers=merchant.headers(),
    )
    assert detail_fields(assert_error(r, 400, "VALIDATION_ERROR")) == {"metadata.k"}


def test_metadata_keeps_numbers_booleans_and_null(client, merchant):
    metadata = {"s": "x", "i": 12345678901234, "f": 1.5, "b": False, "n": None}
    r = post_payment(client, merchant, {**PAYMENT, "metadata": metadata})
    assert r.status_code == 201 and r.json["data"]["metadata"] == metadata


def test_missing_token_is_named(client, merchant):
    error = assert_error(post_payment(client, merchant, {"amount": 5, "network": "BASE"}), 400, "VALIDATION_ERROR")
    assert detail_fields(error) == {"token"}


def test_several_invalid_fields_are_all_named(client, merchant):
    body = {**PAYMENT, "amount": 0.001, "customer_email": "x", "redirect_url": "nope", "extra": 1}
    error = assert_error(post_payment(client, merchant, body), 400, "VALIDATION_ERROR")
    assert {"amount", "customer_email", "redirect_url", "extra"} <= detail_fields(error)


def test_invalid_body_writes_nothing(client, merchant, sessions):
    post_payment(client, merchant, {**PAYMENT, "amount": 0.001})
    with sessions() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.merchant_id == merchant.id)) == 0


def test_amount_with_two_decimals_and_trailing_zeros_is_accepted(client, merchant):
    r = client.post(
        f"{API}/payments",
        data='{"amount": 10.50, "token": "USDC", "network": "BASE"}',
        content_type="application/json",
        headers=merchant.headers(),
    )
    assert r.status_code == 201 and r.json["data"]["amount"] == 10.5


@pytest.mark.parametrize("key", ["", " ", "x" * 256])
def test_bad_idempotency_key_is_validation_error(client, merchant, key):
    r = client.post(f"{API}/payments", json=PAYMENT, headers=merchant.headers(**{"Idempotency-Key": key}))
    assert "Idempotency-Key" in detail_fields(assert_error(r, 400, "VALIDATION_ERROR"))


# ---- UNAUTHORIZED -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        None,
        "",
        "abc",
        "kassa_test_",
        "Bearer kassa_test_abc",
        "kassa_prod_{random}",
        "kassa_test_{random}",
        "kassa_live_{random}",
    ],
)
def test_missing_malformed_or_unknown_key_is_unauthorized(client, key):
    r = call(client, "GET", "/payments", key and key.format(random=secrets.token_urlsafe(32)))
    assert_error(r, 401, "UNAUTHORIZED")
    assert "X-Api-Key" in r.headers["WWW-Authenticate"]


def test_revoked_key_is_unauthorized(client, merchant, sessions):
    with unit_of_work(sessions) as s:
        row = keys.create_key(s, merchant.id, "test", SCOPES)
    assert call(client, "GET", "/payments", row.key).status_code == 200
    with unit_of_work(sessions) as s:
        keys.revoke_key(s, merchant.id, row.row.id, actor=audit.OPERATOR)
    assert_error(call(client, "GET", "/payments", row.key), 401, "UNAUTHORIZED")


def test_test_key_with_live_prefix_is_unauthorized(client, merchant):
    forged = "kassa_live_" + merchant.test_key[len("kassa_test_") :]
    assert_error(call(client, "GET", "/payments", forged), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "account", [{"banned": True}, {"activated": False}, {"business_name": None}, {"business_name": ""}]
)
@pytest.mark.parametrize("mode", ["test", "live"])
def test_banned_or_incomplete_account_is_unauthorized(client, make_merchant, account, mode):
    m = make_merchant(**account)
    assert_error(client.get(f"{API}/payments", headers=m.headers(mode)), 401, "UNAUTHORIZED")
    assert_error(client.post(f"{API}/payments", json=PAYMENT, headers=m.headers(mode)), 401, "UNAUTHORIZED")


def test_banning_takes_effect_on_the_next_request(client, merchant, sessions):
    assert client.get(f"{API}/payments", headers=merchant.headers()).status_code == 200
    with unit_of_work(sessions) as s:
        s.get(Merchant, merchant.id).banned = True
    assert_error(client.get(f"{API}/payments", headers=merchant.headers()), 401, "UNAUTHORIZED")


def payments_of(sessions, merchant_id) -> int:
    with sessions() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.merchant_id == merchant_id))


def test_a_key_revoked_after_a_create_creates_nothing_more(client, merchant, sessions):
    """Revocation holds from the very next create, which writes nothing."""
    with unit_of_work(sessions) as s:
        row = keys.create_key(s, merchant.id, "test", SCOPES)
    assert call(client, "POST", "/payments", row.key, json=PAYMENT).status_code == 201
    assert call(client, "POST", "/payments", row.key, json=PAYMENT).status_code == 201
    before = payments_of(sessions, merchant.id)
    with unit_of_work(sessions) as s:
        keys.revoke_key(s, merchant.id, row.row.id, actor=audit.OPERATOR)
    for _ in range(2):
        r = call(client, "POST", "/payments", row.key, json=PAYMENT, headers={"Idempotency-Key": secrets.token_hex(8)})
        assert_error(r, 401, "UNAUTHORIZED")
        assert r.headers["WWW-Authenticate"] == 'ApiKey header="X-Api-Key"'
    assert payments_of(sessions, merchant.id) == before


@pytest.mark.parametrize(
    "body",
    [
        {**PAYMENT, "amount": -1},  # refused by validation
        {**PAYMENT, "network": "NO_SUCH_NETWORK"},  # refused by the create before its read
    ],
)
def test_a_revoked_key_gets_401_rather_than_what_its_request_would_get(client, merchant, sessions, body):
    with unit_of_work(sessions) as s:
        row = keys.create_key(s, merchant.id, "test", SCOPES)
    assert call(client, "POST", "/payments", row.key, json=PAYMENT).status_code == 201
    with unit_of_work(sessions) as s:
        keys.revoke_key(s, merchant.id, row.row.id, actor=audit.OPERATOR)
    assert_error(call(client, "POST", "/payments", row.key, json=body), 401, "UNAUTHORIZED")


def test_a_replay_for_a_revoked_key_is_refused(client, merchant, sessions):
    """An Idempotency-Key's earlier answer is replayed even when the request would now be
    refused (its pair no longer enabled...), but never to a revoked key."""
    with unit_of_work(sessions) as s:
        row = keys.create_key(s, merchant.id, "test", SCOPES)
    idem = {"Idempotency-Key": secrets.token_hex(8)}
    assert call(client, "POST", "/payments", row.key, json=PAYMENT, headers=dict(idem)).status_code == 201
    with unit_of_work(sessions) as s:
        keys.revoke_key(s, merchant.id, row.row.id, actor=audit.OPERATOR)
    assert_error(call(client, "POST", "/payments", row.key, json=PAYMENT, headers=dict(idem)), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("account", [{"banned": True}, {"activated": False}, {"business_name": None}])
def test_a_banned_or_deactivated_account_creates_nothing_on_the_next_request(client, make_merchant, sessions, account):
    m = make_merchant()
    assert client.post(f"{API}/payments", json=PAYMENT, headers=m.headers()).status_code == 201
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Merchant).where(Merchant.id == m.id).values(**account))
    assert_error(client.post(f"{API}/payments", json=PAYMENT, headers=m.headers()), 401, "UNAUTHORIZED")
    assert payments_of(sessions, m.id) == 1


# ---- FORBIDDEN ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scoped_keys(sessions):
    """One merchant; per scope, a key with every other scope and a key with only that one."""
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, f"scopes-{secrets.token_hex(6)}@example.com", None, "Scoped", True)
        pairs = {
            scope: (
                keys.create_key(s, m.id, "test", [o for o in SCOPES if o != scope]).key,
                keys.create_key(s, m.id, "test", [scope]).key,
            )
            for scope in SCOPES
        }
    return pairs


@pytest.mark.parametrize("method, path, scope", ENDPOINTS, ids=[f"{m} {p} [{s}]" for m, p, s in ENDPOINTS])
def test_key_without_the_scope_is_forbidden(client, scoped_keys, method, path, scope):
    without, only = scoped_keys[scope]
    target = path.format(id=uuid.uuid4())
    error = assert_error(call(client, method, target, without, json={}), 403, "FORBIDDEN")
    assert scope in error["message"]
    assert call(client, method, target, only, json={}).status_code not in (401, 403)


# ---- NOT_FOUND ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [f"{API}/nothing-here", f"{API}/payments/{{id}}/refund", "/v1/api", "/v2/api/payments"]
)
def test_unknown_route_is_not_found_in_the_envelope(client, merchant, path):
    assert_error(client.get(path.format(id=uuid.uuid4()), headers=merchant.headers()), 404, "NOT_FOUND")


@pytest.fixture
def objects_of(client, create_payment, create_product, create_webhook):
    def make(merchant, mode="test"):
        return {
            "payments": create_payment(merchant, mode=mode)["id"],
            "products": create_product(merchant, mode=mode)["id"],
            "webhooks": create_webhook(merchant, mode=mode)["id"],
        }

    return make


OBJECT_CALLS = [
    ("GET", "/payments/{id}"),
    ("POST", "/payments/{id}/cancel"),
    ("GET", "/products/{id}"),
    ("PATCH", "/products/{id}"),
    ("DELETE", "/products/{id}"),
    ("GET", "/webhooks/{id}"),
    ("PATCH", "/webhooks/{id}"),
    ("DELETE", "/webhooks/{id}"),
    ("POST", "/webhooks/{id}/rotate-secret"),
]


def _probe_all(client, key, ids):
    for method, path in OBJECT_CALLS:
        kind = path.split("/")[1]
        body = {"description": "x"} if method == "PATCH" else None
        r = call(client, method, path.format(id=ids[kind]), key, json=body)
        assert_error(r, 404, "NOT_FOUND")


def test_other_merchants_objects_are_not_found(client, make_merchant, objects_of):
    owner, stranger = make_merchant(), make_merchant()
    ids = objects_of(owner)
    _probe_all(client, stranger.test_key, ids)
    assert call(client, "GET", f"/payments/{ids['payments']}", owner.test_key).status_code == 200


def test_short_id_of_another_merchants_payment_is_not_found(client, make_merchant, create_payment):
    owner, stranger = make_merchant(), make_merchant()
    short_id = create_payment(owner)["short_id"]
    assert_error(call(client, "GET", f"/payments/{short_id}", stranger.test_key), 404, "NOT_FOUND")


def test_test_key_cannot_see_live_objects(client, live_merchant, objects_of):
    ids = objects_of(live_merchant, mode="live")
    _probe_all(client, live_merchant.test_key, ids)
    for kind in ("payments", "products", "webhooks"):
        listed = call(client, "GET", f"/{kind}", live_merchant.test_key).json["data"]
        listed = listed["data"] if kind == "payments" else listed
        assert listed == []


def test_live_key_cannot_see_test_objects(client, live_merchant, objects_of):
    ids = objects_of(live_merchant, mode="test")
    _probe_all(client, live_merchant.live_key, ids)
    assert call(client, "GET", "/payments", live_merchant.live_key).json["data"]["meta"]["total"] == 0


def test_other_mode_objects_are_untouched_by_failed_calls(client, live_merchant, objects_of):
    ids = objects_of(live_merchant, mode="live")
    _probe_all(client, live_merchant.test_key, ids)
    for kind in ("payments", "products", "webhooks"):
        assert call(client, "GET", f"/{kind}/{ids[kind]}", live_merchant.live_key).status_code == 200
    assert (
        call(client, "GET", f"/payments/{ids['payments']}", live_merchant.live_key).json["data"]["status"] == "PENDING"
    )


# ---- METHOD_NOT_ALLOWED -------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("PUT", "/payments"),
        ("DELETE", "/payments/{id}"),
        ("PATCH", "/payments/{id}"),
        ("GET", "/payments/{id}/cancel"),
        ("PUT", "/products/{id}"),
        ("POST", "/webhooks/{id}"),
    ],
)
def test_unsupported_method_is_405_in_the_envelope(client, merchant, method, path):
    r = call(client, method, path.format(id=uuid.uuid4()), merchant.test_key)
    assert_error(r, 405, "METHOD_NOT_ALLOWED")
    assert method not in r.headers["Allow"]


# ---- CONFLICT -----------------------------------------------------------------------------


def test_cancel_of_a_canceled_payment_is_conflict(client, merchant, create_payment):
    p = create_payment(merchant)
    assert call(client, "POST", f"/payments/{p['id']}/cancel", merchant.test_key).status_code == 200
    assert_error(call(client, "POST", f"/payments/{p['id']}/cancel", merchant.test_key), 409, "CONFLICT")


def test_idempotency_key_reused_with_another_body_is_conflict(client, merchant):
    key = secrets.token_hex(8)
    first = client.post(f"{API}/payments", json=PAYMENT, headers=merchant.headers(**{"Idempotency-Key": key}))
    assert first.status_code == 201
    r = client.post(
        f"{API}/payments", json={**PAYMENT, "amount": 1}, headers=merchant.headers(**{"Idempotency-Key": key})
    )
    assert_error(r, 409, "CONFLICT")


# ---- UNPROCESSABLE_ENTITY -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body, field",
    [
        ({"amount": 5, "token": "DOGE", "network": "BASE"}, "token"),
        ({"amount": 5, "token": "BTC", "network": "ETHEREUM"}, "token"),
        ({"amount": 5, "token": "POL", "network": "BASE"}, "token"),
        ({"amount": 5, "token": "USDC", "network": "NOWHERE"}, "network"),
        ({"amount": 5, "token": "USDC", "network": "BITCOIN"}, "token"),
    ],
)
def test_unsupported_token_network_pair_is_unprocessable(client, merchant, body, field):
    error = assert_error(post_payment(client, merchant, body), 422, "UNPROCESSABLE_ENTITY")
    assert field in detail_fields(error)
    assert "/networks" in error["message"]


def test_live_payment_on_a_network_without_rpc_url_is_unprocessable(client, live_merchant):
    r = post_payment(client, live_merchant, {"amount": 5, "token": "USDC", "network": "BASE"}, mode="live")
    assert "live" in assert_error(r, 422, "UNPROCESSABLE_ENTITY")["message"]


def test_live_payment_without_a_wallet_is_unprocessable_with_a_clear_message(client, merchant):
    r = post_payment(client, merchant, LIVE_PAYMENT, mode="live")
    message = assert_error(r, 422, "UNPROCESSABLE_ENTITY")["message"]
    assert "wallet" in message and "evm" in message


def test_live_payment_with_a_wallet_is_created(client, live_merchant):
    r = post_payment(client, live_merchant, LIVE_PAYMENT, mode="live")
    assert r.status_code == 201 and r.json["data"]["test_mode"] is False


def test_payment_for_an_inactive_product_is_unprocessable(client, merchant, create_product):
    product = create_product(merchant, active=False)
    r = post_payment(client, merchant, {"product_id": product["id"], "token": "USDC", "network": "BASE"})
    assert "product_id" in detail_fields(assert_error(r, 422, "UNPROCESSABLE_ENTITY"))


# ---- RATE_LIMIT_EXCEEDED ------------------------------------------------------------------


def _hit_until_limited(clients, key: str, limit: int):
    """Send requests (round robin over ``clients``) until one is refused. A fixed window may
    roll over once meanwhile, so allow up to two windows' worth."""
    seen = []
    for i in range(2 * limit + 2):
        r = clients[i % len(clients)].get(f"{API}/payments", headers={"X-Api-Key": key})
        seen.append(r)
        if r.status_code == 429:
            return seen
    pytest.fail(f"never rate limited: {[r.status_code for r in seen]}")


def _assert_limited(responses, limit: int):
    refused, allowed = responses[-1], responses[:-1]
    error = assert_error(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert str(limit) in error["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 61
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    window = allowed[-limit:]
    assert [r.status_code for r in window] == [200] * limit
    assert [r.headers["X-RateLimit-Remaining"] for r in window] == [str(n) for n in range(limit - 1, -1, -1)]


def test_rate_limit_answers_429_with_retry_after(settings, engine, merchant):
    limited = create_app(settings.with_(web={"rate_limit_per_minute": 3}), engine=engine).test_client()
    _assert_limited(_hit_until_limited([limited], merchant.test_key, 3), 3)


def test_rate_limit_is_per_key(settings, engine, merchant, sessions):
    limited = create_app(settings.with_(web={"rate_limit_per_minute": 3}), engine=engine).test_client()
    _hit_until_limited([limited], merchant.test_key, 3)
    other = new_key(sessions, merchant.id, "test", SCOPES)
    assert limited.get(f"{API}/payments", headers={"X-Api-Key": other}).status_code == 200


def test_rate_limit_is_shared_between_instances_through_redis(settings, engine, merchant):
    shared = settings.with_(web={"rate_limit_per_minute": 3}, redis_url="redis://127.0.0.1:6379/0")
    a = create_app(shared, engine=engine).test_client()
    b = create_app(shared, engine=engine).test_client()
    responses = _hit_until_limited([a, b], merchant.test_key, 3)
    _assert_limited(responses, 3)
    assert len(responses) <= 7  # the two instances counted together, not 3 each


# ---- SERVICE_UNAVAILABLE -------------------------------------------------------------------


def test_missing_exchange_rate_is_503_and_writes_nothing(settings, engine, merchant, sessions):
    no_eth = create_app(settings.with_(rates={"fixed_rates": "BTC=60000"}), engine=engine).test_client()
    r = no_eth.post(
        f"{API}/payments", json={"amount": 5, "token": "ETH", "network": "ETHEREUM"}, headers=merchant.headers()
    )
    assert "ETH" in assert_error(r, 503, "SERVICE_UNAVAILABLE")["message"]
    stable = no_eth.post(f"{API}/payments", json=PAYMENT, headers=merchant.headers())
    assert stable.status_code == 201
    with sessions() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.merchant_id == merchant.id)) == 1


# ---- 413, 415 -----------------------------------------------------------------------------


def test_body_over_64_kib_is_refused_in_the_envelope(client, merchant):
    raw = json.dumps({**PAYMENT, "customer_name": "x" * (65 * 1024)})
    r = client.post(f"{API}/payments", data=raw, content_type="application/json", headers=merchant.headers())
    assert_error(r, 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_wrong_content_type_is_415(client, merchant, content_type):
    r = client.post(f"{API}/payments", data=json.dumps(PAYMENT), content_type=content_type, headers=merchant.headers())
    assert_error(r, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_json_with_charset_is_accepted(client, merchant):
    r = client.post(
        f"{API}/payments",
        data=json.dumps(PAYMENT),
        content_type="application/json; charset=utf-8",
        headers=merchant.headers(),
    )
    assert r.status_code == 201


# ---- INTERNAL_ERROR -----------------------------------------------------------------------


def test_unexpected_failure_is_500_with_request_id_and_no_stack_trace(settings, engine):
    app = create_app(settings, engine=engine)

    @app.get("/v1/api/boom")
    def boom():
        raise RuntimeError("database password is hunter2")

    r = app.test_client().get(f"{API}/boom")
    error = assert_error(r, 500, "INTERNAL_ERROR")
    assert error["request_id"] == r.headers["X-Request-Id"] and len(error["request_id"]) >= 16
    text = r.get_data(as_text=True)
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text


def test_request_id_from_the_client_is_echoed(client):
    r = client.get(f"{API}/payments", headers={"X-Request-Id": "req-123"})
    assert r.headers["X-Request-Id"] == "req-123"
