"""Refunds through the API (DESIGN §8): create, list, get, cancel; what is refundable; the
payment's refunded and refundable amounts; validation; Idempotency-Key; scope."""

from __future__ import annotations

import uuid

from tests.support.api import API, assert_error, detail_fields, new_key


def get_payment(client, merchant, pid):
    r = client.get(f"{API}/payments/{pid}", headers=merchant.headers())
    assert r.status_code == 200
    return r.get_json()["data"]


def test_a_refund_of_part_of_an_over_paid_payment(client, make_merchant, paid_payment, create_refund, settings):
    m = make_merchant()
    p = paid_payment(m, 15_000_000)
    assert get_payment(client, m, p["id"])["refundable_amount"] == "15"
    refund = create_refund(m, p["id"], {"amount": "2.66", "reason": "over-paid"})
    assert refund["status"] == "AWAITING_ADDRESS"
    assert (refund["amount"], refund["token"], refund["network"]) == ("2.66", "USDC", "BASE")
    assert refund["payment_id"] == p["id"] and refund["reason"] == "over-paid"
    assert refund["address"] is None and refund["transaction_hash"] is None
    assert refund["claim_url"].startswith(f"{settings.checkout_url}/refunds/")
    assert len(refund["claim_url"].rsplit("/", 1)[1]) >= 43  # 32 random bytes
    assert refund["expires_at"] > refund["created_at"]
    shown = get_payment(client, m, p["id"])
    assert (shown["refunded_amount"], shown["refundable_amount"]) == ("0", "12.34")

    r = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers())
    assert r.status_code == 200 and r.get_json()["data"] == refund
    r = client.get(f"{API}/payments/{p['short_id']}/refunds", headers=m.headers())
    assert r.status_code == 200 and r.get_json()["data"] == [refund]


def test_the_default_amount_is_everything_refundable_and_then_nothing_is(
    client, make_merchant, paid_payment, create_refund
):
    m = make_merchant()
    p = paid_payment(m, 12_340_000)
    first = create_refund(m, p["id"], {"amount": 2})
    rest = create_refund(m, p["id"])
    assert (first["amount"], rest["amount"]) == ("2", "10.34")
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={}, headers=m.headers())
    assert_error(r, 409, "CONFLICT")
    assert get_payment(client, m, p["id"])["refundable_amount"] == "0"


def test_a_canceled_refund_is_refundable_again_and_cannot_be_canceled_twice(
    client, make_merchant, paid_payment, create_refund
):
    m = make_merchant()
    p = paid_payment(m, 5_000_000)
    refund = create_refund(m, p["id"])
    r = client.post(f"{API}/refunds/{refund['id']}/cancel", headers=m.headers())
    assert r.status_code == 200, r.get_data(as_text=True)
    canceled = r.get_json()["data"]
    assert canceled["status"] == "CANCELED" and canceled["canceled_at"]
    assert get_payment(client, m, p["id"])["refundable_amount"] == "5"
    r = client.post(f"{API}/refunds/{refund['id']}/cancel", headers=m.headers())
    assert_error(r, 409, "CONFLICT")


def test_nothing_is_refundable_on_a_pending_payment(client, make_merchant, create_payment):
    m = make_merchant()
    p = create_payment(m)
    assert p["refundable_amount"] == "0" and p["refunded_amount"] == "0"
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "1"}, headers=m.headers())
    assert_error(r, 409, "CONFLICT")


def test_amounts_are_checked(client, make_merchant, paid_payment):
    m = make_merchant()
    p = paid_payment(m, 5_000_000)
    url = f"{API}/payments/{p['id']}/refunds"
    for amount in ("0", 0, "-1", -2.5, "abc", "1e3", True, [], "", "0.0000000"):
        error = assert_error(client.post(url, json={"amount": amount}, headers=m.headers()), 400, "VALIDATION_ERROR")
        assert detail_fields(error) == {"amount"}, (amount, error)
    error = assert_error(client.post(url, json={"amount": "1.0000001"}, headers=m.headers()), 400, "VALIDATION_ERROR")
    assert detail_fields(error) == {"amount"} and "decimal places" in error["message"]
    error = assert_error(client.post(url, json={"amount": "5.000001"}, headers=m.headers()), 400, "VALIDATION_ERROR")
    assert detail_fields(error) == {"amount"} and "more than is refundable" in error["message"]
    error = assert_error(client.post(url, json={"amount": 1, "x": 1}, headers=m.headers()), 400, "VALIDATION_ERROR")
    # exact: a number with six decimals, the whole, and the string form all go through
    r = client.post(url, json={"amount": 1.000001}, headers=m.headers())
    assert r.status_code == 201 and r.get_json()["data"]["amount"] == "1.000001"
    r = client.post(url, json={"amount": "3.999999"}, headers=m.headers())
    assert r.status_code == 201 and get_payment(client, m, p["id"])["refundable_amount"] == "0"


def test_another_merchants_payment_and_refund_are_not_found(client, make_merchant, paid_payment, create_refund):
    owner, other = make_merchant(), make_merchant()
    p = paid_payment(owner)
    refund = create_refund(owner, p["id"], {"amount": "1"})
    assert_error(client.post(f"{API}/payments/{p['id']}/refunds", json={}, headers=other.headers()), 404, "NOT_FOUND")
    assert_error(client.get(f"{API}/payments/{p['id']}/refunds", headers=other.headers()), 404, "NOT_FOUND")
    assert_error(client.get(f"{API}/refunds/{refund['id']}", headers=other.headers()), 404, "NOT_FOUND")
    assert_error(client.post(f"{API}/refunds/{refund['id']}/cancel", headers=other.headers()), 404, "NOT_FOUND")
    # nor in the other mode, nor with ids that are not ids
    assert_error(client.get(f"{API}/refunds/{refund['id']}", headers=owner.headers("live")), 404, "NOT_FOUND")
    assert_error(client.get(f"{API}/refunds/{uuid.uuid4()}", headers=owner.headers()), 404, "NOT_FOUND")
    assert_error(client.get(f"{API}/refunds/not-an-id", headers=owner.headers()), 404, "NOT_FOUND")


def test_the_refunds_scope_is_needed(client, make_merchant, paid_payment, create_refund, sessions):
    m = make_merchant()
    p = paid_payment(m)
    refund = create_refund(m, p["id"], {"amount": "1"})
    key = new_key(sessions, m.id, "test", ["payments:create", "payments:read", "products:manage", "webhooks:manage"])
    headers = {"X-Api-Key": key}
    for method, url in (
        ("post", f"{API}/payments/{p['id']}/refunds"),
        ("get", f"{API}/payments/{p['id']}/refunds"),
        ("get", f"{API}/refunds/{refund['id']}"),
        ("post", f"{API}/refunds/{refund['id']}/cancel"),
    ):
        r = getattr(client, method)(url, json={} if method == "post" else None, headers=headers)
        assert "refunds:manage" in assert_error(r, 403, "FORBIDDEN")["message"]
    only = new_key(sessions, m.id, "test", ["refunds:manage"])
    assert client.get(f"{API}/refunds/{refund['id']}", headers={"X-Api-Key": only}).status_code == 200


def test_an_idempotency_key_answers_the_first_refund(client, make_merchant, paid_payment):
    m = make_merchant()
    p = paid_payment(m, 5_000_000)
    url = f"{API}/payments/{p['id']}/refunds"
    headers = m.headers(**{"Idempotency-Key": "refund-1"})
    first = client.post(url, json={"amount": "1"}, headers=headers)
    again = client.post(url, json={"amount": "1"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json()["data"] == first.get_json()["data"]
    assert_error(client.post(url, json={"amount": "2"}, headers=headers), 409, "CONFLICT")
    # the key of a payment's create is another request
    r = client.post(f"{API}/payments", json={"amount": 1, "token": "USDC", "network": "BASE"}, headers=headers)
    assert_error(r, 409, "CONFLICT")
    assert get_payment(client, m, p["id"])["refundable_amount"] == "4"


def test_wrong_network_funds_are_refunded_on_their_network(client, make_merchant, create_payment, sessions):
    from tests.support.refunds import settle_confirmed

    m = make_merchant()
    p = create_payment(m, {"amount": 5, "token": "USDC", "network": "BASE"})
    settle_confirmed(sessions, p, 5_000_000, network="POLYGON")
    shown = get_payment(client, m, p["id"])
    assert shown["status"] == "PENDING" and shown["refundable_amount"] == "5"
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={}, headers=m.headers())
    assert r.status_code == 201, r.get_data(as_text=True)
    refund = r.get_json()["data"]
    assert (refund["network"], refund["amount"]) == ("POLYGON", "5")
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"network": "BASE"}, headers=m.headers())
    assert_error(r, 409, "CONFLICT")


def test_an_empty_body_refunds_everything_and_a_network_without_the_token_is_422(client, make_merchant, paid_payment):
    m = make_merchant()
    p = paid_payment(m, 3_000_000)
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"network": "BITCOIN"}, headers=m.headers())
    assert_error(r, 422, "UNPROCESSABLE_ENTITY")
    r = client.post(f"{API}/payments/{p['id']}/refunds", headers=m.headers())  # no body at all
    assert r.status_code == 201, r.get_data(as_text=True)
    assert r.get_json()["data"]["amount"] == "3"
