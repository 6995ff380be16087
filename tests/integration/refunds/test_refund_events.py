"""Refund events (DESIGN §3 "Events", §8): each transition's event through the outbox and
the bus to the webhook sender, delivered signed to the endpoints whose ``events`` filter
names it; readable through GET /events; and the expirer's refund.expired."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import Refund
from kassa_client import verify_signature
from kassa_expirer.jobs import Jobs
from tests.support.api import API, assert_error
from tests.support.bus import bus  # noqa: F401 (fixture)
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.refunds import GOOD, claim
from tests.support.wait import until
from tests.support.webhooks import add_endpoint, running_sender

REFUND_EVENTS = ["refund.created", "refund.claimed", "refund.canceled", "refund.expired"]


@pytest.fixture
def sender(settings, engine, bus):
    with running_sender(settings, engine, bus[0], threads=4) as s:
        yield s


def overdue(sessions, refund_id: str) -> None:
    """Make the refund's claim time run out now (as if REFUND_CLAIM_DAYS had passed)."""
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Refund).where(Refund.id == refund_id).values(expires_at=sa.func.now() - timedelta(seconds=1))
        )


def test_the_endpoint_filter_takes_refund_events_and_defaults_to_them_too(client, make_merchant):
    m = make_merchant()
    r = client.post(
        f"{API}/webhooks",
        json={"url": "https://hooks.example.com/r", "events": ["refund.claimed"]},
        headers=m.headers(),
    )
    assert r.status_code == 201 and r.get_json()["data"]["events"] == ["refund.claimed"]
    r = client.post(f"{API}/webhooks", json={"url": "https://hooks.example.com/all"}, headers=m.headers())
    assert {*REFUND_EVENTS, "refund.completed", "refund.reorged"} <= set(r.get_json()["data"]["events"])
    r = client.post(
        f"{API}/webhooks", json={"url": "https://hooks.example.com/x", "events": ["refund.paid"]}, headers=m.headers()
    )
    assert_error(r, 400, "VALIDATION_ERROR")


def test_refund_events_are_delivered_signed_to_the_endpoints_that_filter_for_them(
    client, make_merchant, paid_payment, create_refund, sessions, bus, sender, receiver
):
    _, _, publisher = bus
    m = make_merchant()
    refunds_hook = add_endpoint(sessions, m.id, receiver.url + "?for=refunds", events=REFUND_EVENTS)
    add_endpoint(sessions, m.id, receiver.url + "?for=payments", events=["payment.completed"])
    p = paid_payment(m, 10_000_000)
    claimed = create_refund(m, p["id"], {"amount": "1"})
    assert claim(client, claimed, GOOD).status_code == 303
    canceled = create_refund(m, p["id"], {"amount": "2"})
    client.post(f"{API}/refunds/{canceled['id']}/cancel", headers=m.headers())
    unclaimed = create_refund(m, p["id"], {"amount": "3"})
    overdue(sessions, unclaimed["id"])
    assert Jobs(sessions, timedelta(hours=1)).expire_refunds() >= 1

    def refund_hits():
        relay_pending(sessions, publisher)
        return [h for h in receiver.all() if h.headers["X-Kassa-Event"].startswith("refund.")]

    hits = until(lambda: len(refund_hits()) >= 6 and refund_hits(), timeout=30, message="six refund webhooks")
    got = sorted((h.headers["X-Kassa-Event"], h.json["data"]["id"]) for h in hits)
    assert got == sorted(
        [
            ("refund.created", claimed["id"]),
            ("refund.claimed", claimed["id"]),
            ("refund.created", canceled["id"]),
            ("refund.canceled", canceled["id"]),
            ("refund.created", unclaimed["id"]),
            ("refund.expired", unclaimed["id"]),
        ]
    )
    for h in hits:
        assert h.path == "/hooks?for=refunds"  # never to the endpoint that did not ask for them
        assert verify_signature(refunds_hook.secret, h.headers["X-Kassa-Signature"], h.body)
        body = h.json
        assert body["event"] == h.headers["X-Kassa-Event"] and body["id"] == h.headers["X-Kassa-Event-Id"]
        assert body["test_mode"] is True and body["data"]["refund_id"] == body["data"]["id"]
        assert body["data"]["payment_id"] == p["id"]
    claimed_hit = next(h for h in hits if h.headers["X-Kassa-Event"] == "refund.claimed")
    assert claimed_hit.json["data"]["status"] == "AWAITING_PAYMENT" and claimed_hit.json["data"]["address"] == GOOD
    expired = client.get(f"{API}/refunds/{unclaimed['id']}", headers=m.headers()).get_json()["data"]
    assert expired["status"] == "EXPIRED"

    # the events log has them too
    r = client.get(f"{API}/events", query_string={"type": "refund.expired", "payment_id": p["id"]}, headers=m.headers())
    [logged] = r.get_json()["data"]["data"]
    assert logged["data"]["id"] == unclaimed["id"] and logged["data"]["status"] == "EXPIRED"


def test_the_expirer_expires_only_unclaimed_refunds_past_their_time(
    client, make_merchant, paid_payment, create_refund, sessions, settings
):
    m = make_merchant()
    p = paid_payment(m, 10_000_000)
    fresh = create_refund(m, p["id"], {"amount": "1"})
    claimed = create_refund(m, p["id"], {"amount": "1"})
    claim(client, claimed, GOOD)
    late = create_refund(m, p["id"], {"amount": "1"})
    overdue(sessions, claimed["id"])
    overdue(sessions, late["id"])
    # the claim period is REFUND_CLAIM_DAYS from the creation
    created = client.get(f"{API}/refunds/{fresh['id']}", headers=m.headers()).get_json()["data"]
    span = datetime.fromisoformat(created["expires_at"]) - datetime.fromisoformat(created["created_at"])
    assert span == timedelta(days=settings.refund_claim_days)
    jobs = Jobs(sessions, timedelta(hours=1))
    while jobs.expire_refunds():
        pass
    status = {
        r["id"]: client.get(f"{API}/refunds/{r['id']}", headers=m.headers()).get_json()["data"]["status"]
        for r in (fresh, claimed, late)
    }
    assert status == {fresh["id"]: "AWAITING_ADDRESS", claimed["id"]: "AWAITING_PAYMENT", late["id"]: "EXPIRED"}
    # its amount is refundable again, and it cannot be canceled any more
    shown = client.get(f"{API}/payments/{p['id']}", headers=m.headers()).get_json()["data"]
    assert shown["refundable_amount"] == "8"
    assert_error(client.post(f"{API}/refunds/{late['id']}/cancel", headers=m.headers()), 409, "CONFLICT")
