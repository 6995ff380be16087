"""A test-mode payment from POST /payments to a signed webhook at a real receiver, through
the running processes, real PostgreSQL and RabbitMQ."""

from __future__ import annotations

import uuid

import requests
import sqlalchemy as sa

from kassa_common.models import Event
from kassa_common.webhooks.signing import verify_signature
from tests.support.wait import until

TIMEOUT = 30


def register_webhook(stack, merchant, url: str) -> str:
    r = requests.post(f"{stack.api}/webhooks", json={"url": url}, headers=merchant.headers(), timeout=5)
    assert r.status_code == 201, r.text
    return r.json()["data"]["secret"]


def create_payment(stack, merchant, **extra) -> dict:
    body = {"amount": 12.34, "token": "USDC", "network": "BASE", "metadata": {"order_id": "A-1"}, **extra}
    r = requests.post(f"{stack.api}/payments", json=body, headers=merchant.headers(), timeout=5)
    assert r.status_code == 201, r.text
    return r.json()["data"]


def test_test_payment_brings_created_then_completed_signed_webhooks(stack, merchant, receiver):
    secret = register_webhook(stack, merchant, receiver.url)
    p = create_payment(stack, merchant)
    done = until(lambda: receiver.events("payment.completed", p["id"]), TIMEOUT, message="payment.completed")
    created = receiver.events("payment.created", p["id"])
    assert created, "payment.created arrived"
    hook = done[0]
    verify_signature(secret, hook.headers["X-Kassa-Signature"], hook.body)
    assert hook.headers["X-Kassa-Event"] == "payment.completed"
    assert hook.headers["X-Kassa-Event-Id"] == hook.json["id"] and hook.json["id"].startswith("evt_")
    data = hook.json["data"]
    assert data["payment_id"] == p["id"] and data["status"] == "COMPLETED"
    assert data["metadata"] == {"order_id": "A-1"} and hook.json["test_mode"] is True
    got = requests.get(f"{stack.api}/payments/{p['short_id']}", headers=merchant.headers(), timeout=5).json()["data"]
    assert got["status"] == "COMPLETED" and got["transaction_hash"].startswith("test_tx_")
    assert got["amount_received"] == got["crypto_amount"]


def test_cancel_brings_payment_canceled(stack, merchant, receiver):
    register_webhook(stack, merchant, receiver.url)
    p = create_payment(stack, merchant)
    r = requests.post(f"{stack.api}/payments/{p['id']}/cancel", headers=merchant.headers(), timeout=5)
    assert r.status_code == 200
    hook = until(lambda: receiver.events("payment.canceled", p["id"]), TIMEOUT)[0]
    assert hook.json["data"]["status"] == "CANCELED"


def test_overdue_payment_brings_payment_expired(stack, merchant, receiver, sessions):
    from kassa_common.models import Payment

    register_webhook(stack, merchant, receiver.url)
    p = create_payment(stack, merchant)
    with sessions.begin() as s:  # a short lifetime: due now, and no auto-completion
        s.execute(
            sa.update(Payment)
            .where(Payment.id == uuid.UUID(p["id"]))
            .values(expires_at=sa.func.now(), test_auto_complete=False)
        )
    hook = until(lambda: receiver.events("payment.expired", p["id"]), TIMEOUT)[0]
    assert hook.json["data"]["status"] == "EXPIRED"
    assert not receiver.events("payment.completed", p["id"])


def test_failed_deliveries_are_retried_with_the_same_event_id(stack, merchant, receiver):
    register_webhook(stack, merchant, receiver.url)
    hook_id = requests.get(f"{stack.api}/webhooks", headers=merchant.headers(), timeout=5).json()["data"][0]["id"]
    receiver.fail(2, event="payment.created")  # payment.completed may come within the retry delay
    p = create_payment(stack, merchant)
    ok = until(lambda: [r for r in receiver.events("payment.created", p["id"]) if r.status == 200], TIMEOUT)
    tries = receiver.events("payment.created", p["id"])
    assert [r.status for r in tries] == [500, 500, 200]
    assert len({r.json["id"] for r in tries}) == 1

    def recorded():  # the sender records an attempt once it has the answer: after the receiver saw it
        deliveries = requests.get(
            f"{stack.api}/webhooks/{hook_id}/deliveries", headers=merchant.headers(), timeout=5
        ).json()["data"]
        found = next(d for d in deliveries if d["event_id"] == ok[0].json["id"])
        return found if len(found["attempts_log"]) >= 3 else None

    created = until(recorded, TIMEOUT)
    assert [a["status_code"] for a in created["attempts_log"]][:3] == [500, 500, 200]
    r = requests.post(
        f"{stack.api}/webhooks/{hook_id}/deliveries/{created['id']}/redeliver", headers=merchant.headers(), timeout=5
    )
    assert r.status_code == 200
    until(lambda: len(receiver.events("payment.created", p["id"])) == 4, TIMEOUT)


def test_payments_are_created_while_the_broker_is_down_and_events_arrive_after(stack, merchant, receiver, broker_proxy):
    register_webhook(stack, merchant, receiver.url)
    broker_proxy.stop()
    try:
        payments = [create_payment(stack, merchant) for _ in range(5)]
    finally:
        broker_proxy.start()
    for p in payments:
        until(lambda p=p: receiver.events("payment.completed", p["id"]), 60, message=f"completion of {p['id']}")
        assert receiver.events("payment.created", p["id"])


def test_killing_the_webhook_sender_mid_burst_loses_no_webhook(stack, merchant, receiver, sessions):
    register_webhook(stack, merchant, receiver.url)
    payments = [create_payment(stack, merchant) for _ in range(50)]
    stack.kill("webhook-sender")
    payments += [create_payment(stack, merchant) for _ in range(50)]
    stack.start("webhook-sender")
    ids = {p["id"] for p in payments}
    until(
        lambda: ids <= {r.json["data"]["payment_id"] for r in receiver.events("payment.completed")},
        90,
        message="every payment.completed",
    )
    with sessions() as s:
        events = s.execute(
            sa.select(Event.id, Event.type, Event.payment_id).where(Event.payment_id.in_([uuid.UUID(i) for i in ids]))
        ).all()
    # deliveries the killed sender had claimed come back when their lease (60 s) runs out
    wanted = {e.id for e in events if e.type.startswith("payment.")}
    until(lambda: wanted <= {r.json["id"] for r in receiver.all()}, 150, message="every event delivered")
    completed = [e.payment_id for e in events if e.type == "payment.completed"]
    assert len(completed) == len(set(completed)) == 100
