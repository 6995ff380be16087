"""POST/GET /payments and cancel, against real PostgreSQL."""

from __future__ import annotations

import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa

from kassa_common.models import Event, Payment

BODY = {"amount": 25.5, "token": "USDC", "network": "BASE"}


def create(client, merchant, body=None, mode="test", **headers):
    return client.post("/v1/api/payments", json=body or BODY, headers=merchant.headers(mode, **headers))


def test_create_returns_201_with_checkout_url_address_and_pending(client, merchant, settings):
    r = create(client, merchant, {**BODY, "customer_email": "a@b.co", "metadata": {"order": "42"}})
    assert r.status_code == 201, r.json
    p = r.json["data"]
    assert r.json["success"] is True and r.json["statusCode"] == 201
    assert p["status"] == "PENDING"
    assert p["checkout_url"] == f"{settings.checkout_url}/pay/{p['short_id']}"
    assert re.fullmatch(r"0x[0-9a-fA-F]{40}", p["address"])
    assert p["amount"] == 25.5 and p["crypto_amount"] == "25.5" and p["exchange_rate"] == "1"
    assert p["metadata"] == {"order": "42"} and p["test_mode"] is True
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", p["expires_at"])
    assert p["required_confirmations"] == 10 and p["confirmations"] == 0


def test_created_payment_writes_its_event_in_the_outbox(client, merchant, sessions):
    pid = create(client, merchant).json["data"]["id"]
    with sessions() as s:
        events = s.scalars(sa.select(Event).where(Event.payment_id == uuid.UUID(pid))).all()
    assert [e.type for e in events] == ["payment.created"]
    assert events[0].payload["data"]["payment_id"] == pid
    assert events[0].published_at is None


def test_each_payment_gets_its_own_address(client, merchant):
    addresses = {create(client, merchant).json["data"]["address"] for _ in range(5)}
    assert len(addresses) == 5


def test_get_by_uuid_and_by_short_id(client, merchant):
    p = create(client, merchant).json["data"]
    for ref in (p["id"], p["short_id"], p["short_id"].lower()):
        r = client.get(f"/v1/api/payments/{ref}", headers=merchant.headers())
        assert r.status_code == 200 and r.json["data"]["id"] == p["id"]


def test_unknown_payment_is_404(client, merchant):
    for ref in (str(uuid.uuid4()), "ZZZZZZZZZZ", "not-an-id"):
        r = client.get(f"/v1/api/payments/{ref}", headers=merchant.headers())
        assert r.status_code == 404 and r.json["error"]["code"] == "NOT_FOUND"


def test_cancel_then_cancel_again_is_409(client, merchant, sessions):
    p = create(client, merchant).json["data"]
    r = client.post(f"/v1/api/payments/{p['short_id']}/cancel", headers=merchant.headers())
    assert r.status_code == 200 and r.json["data"]["status"] == "CANCELED"
    again = client.post(f"/v1/api/payments/{p['id']}/cancel", headers=merchant.headers())
    assert again.status_code == 409 and again.json["error"]["code"] == "CONFLICT"
    with sessions() as s:
        types = s.scalars(
            sa.select(Event.type).where(Event.payment_id == uuid.UUID(p["id"])).order_by(Event.created_at)
        ).all()
    assert types == ["payment.created", "payment.canceled"]


def test_crypto_amount_uses_locked_rate_for_native_coins(client, merchant):
    r = create(client, merchant, {"amount": 30, "token": "eth", "network": "ethereum"})
    p = r.json["data"]
    assert r.status_code == 201 and p["token"] == "ETH" and p["network"] == "ETHEREUM"
    assert p["exchange_rate"] == "3000" and p["crypto_amount"] == "0.01"


def test_bitcoin_test_payment_gets_a_testnet_address(client, merchant):
    p = create(client, merchant, {"amount": 60, "token": "BTC", "network": "BITCOIN"}).json["data"]
    assert p["address"].startswith("tb1q") and p["crypto_amount"] == "0.001"


def test_idempotency_same_body_returns_same_payment(client, merchant):
    first = create(client, merchant, **{"Idempotency-Key": "order-1"})
    second = create(client, merchant, **{"Idempotency-Key": "order-1"})
    assert first.status_code == second.status_code == 201
    assert first.json["data"]["id"] == second.json["data"]["id"]
    assert second.headers["Idempotent-Replayed"] == "true"


def test_idempotency_other_body_is_409(client, merchant):
    create(client, merchant, **{"Idempotency-Key": "order-2"})
    r = create(client, merchant, {**BODY, "amount": 99}, **{"Idempotency-Key": "order-2"})
    assert r.status_code == 409 and r.json["error"]["code"] == "CONFLICT"


def test_idempotency_is_per_mode_and_merchant(client, merchant, make_merchant):
    a = create(client, merchant, **{"Idempotency-Key": "k"}).json["data"]["id"]
    b = create(client, make_merchant(), **{"Idempotency-Key": "k"}).json["data"]["id"]
    assert a != b


def test_twenty_concurrent_creates_with_one_key_make_one_payment(app, merchant, sessions):
    def post(_):
        with app.test_client() as c:
            r = c.post("/v1/api/payments", json=BODY, headers=merchant.headers(**{"Idempotency-Key": "race"}))
            return r.status_code, r.json["data"]["id"]

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(post, range(20)))
    assert {status for status, _ in results} == {201}
    assert len({pid for _, pid in results}) == 1
    with sessions() as s:
        count = s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.merchant_id == merchant.id))
    assert count == 1
