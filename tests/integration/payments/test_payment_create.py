"""How a create writes: the answer, its event and its address index, the Idempotency-Key's
life (replay, expiry) and a merchant's key changing between payments, against real PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import timedelta

import sqlalchemy as sa

from kassa_common.accounts import merchants
from kassa_common.chains.hd import derive_address
from kassa_common.db import unit_of_work
from kassa_common.models import Event, IdempotencyKey, Payment
from kassa_common.payments.addresses import TEST_INDEX_BASE
from tests.support.api import API, PAYMENT
from tests.support.keys import fresh_key


def create(client, merchant, body=None, **headers):
    return client.post(f"{API}/payments", json=body or PAYMENT, headers=merchant.headers(**headers))


def index_of(sessions, payment_id: str) -> int:
    with sessions() as s:
        return s.scalar(sa.select(Payment.derivation_index).where(Payment.id == uuid.UUID(payment_id)))


def test_the_created_event_carries_the_payment_object_the_create_answered(client, merchant, sessions):
    r = create(client, merchant, {**PAYMENT, "customer_name": "Ann", "metadata": {"order": "7", "n": 1.5}})
    assert r.status_code == 201
    with sessions() as s:
        event = s.scalars(sa.select(Event).where(Event.payment_id == uuid.UUID(r.json["data"]["id"]))).one()
    assert event.type == "payment.created"
    assert event.payload["data"] == {"payment_id": r.json["data"]["id"], **r.json["data"]}


def test_a_replayed_request_takes_no_address_index(client, merchant, sessions):
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", fresh_key())
    first = create(client, merchant, **{"Idempotency-Key": "order-1"}).json["data"]
    for _ in range(3):
        assert create(client, merchant, **{"Idempotency-Key": "order-1"}).json["data"]["id"] == first["id"]
    following = create(client, merchant).json["data"]
    assert index_of(sessions, following["id"]) == index_of(sessions, first["id"]) + 1


def test_an_expired_idempotency_key_starts_afresh(client, merchant, sessions, settings):
    first = create(client, merchant, **{"Idempotency-Key": "order-2"}).json["data"]
    with unit_of_work(sessions) as s:  # the key is older than it is kept
        s.execute(
            sa.update(IdempotencyKey)
            .where(IdempotencyKey.merchant_id == merchant.id, IdempotencyKey.key == "order-2")
            .values(created_at=IdempotencyKey.created_at - timedelta(hours=settings.idempotency_ttl_hours, minutes=1))
        )
    r = create(client, merchant, {**PAYMENT, "amount": 99}, **{"Idempotency-Key": "order-2"})
    assert r.status_code == 201 and "Idempotent-Replayed" not in r.headers
    assert r.json["data"]["id"] != first["id"] and r.json["data"]["amount"] == 99
    again = create(client, merchant, {**PAYMENT, "amount": 99}, **{"Idempotency-Key": "order-2"})
    assert again.json["data"]["id"] == r.json["data"]["id"] and again.headers["Idempotent-Replayed"] == "true"


def test_a_payment_after_the_merchant_changes_its_key_derives_from_the_new_key(client, merchant, sessions):
    old, new = fresh_key(), fresh_key()
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", old)
    before = [create(client, merchant).json["data"]["address"] for _ in range(2)]
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", new)
    after = [create(client, merchant).json["data"]["address"] for _ in range(2)]
    with unit_of_work(sessions) as s:  # and back: the old key lost no index meanwhile
        merchants.set_wallet(s, merchant.id, "test", "evm", old)
    back = create(client, merchant).json["data"]["address"]
    assert before == [derive_address("evm", old, TEST_INDEX_BASE + i) for i in range(2)]  # test mode's range
    assert after == [derive_address("evm", new, TEST_INDEX_BASE + i) for i in range(2)]
    assert back == derive_address("evm", old, TEST_INDEX_BASE + 2)


def test_a_request_the_key_was_used_for_is_replayed_after_its_product_was_deactivated(client, merchant, create_product):
    product = create_product(merchant)
    body = {"product_id": product["id"], "token": "USDC", "network": "BASE"}
    first = create(client, merchant, body, **{"Idempotency-Key": "order-3"})
    assert first.status_code == 201
    assert (
        client.patch(f"{API}/products/{product['id']}", json={"active": False}, headers=merchant.headers()).status_code
        == 200
    )
    again = create(client, merchant, body, **{"Idempotency-Key": "order-3"})
    assert again.status_code == 201 and again.json["data"]["id"] == first.json["data"]["id"]
    assert create(client, merchant, body).status_code == 422  # a new request for it is refused
