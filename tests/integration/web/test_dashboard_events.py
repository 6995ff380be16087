"""The dashboard's events log: the merchant's events of this mode, one event's body and
deliveries, and "resend to endpoint" (CSRF-protected) queuing a delivery through the
redeliver path, on real PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.models import Event, Merchant, WebhookDelivery
from kassa_common.statuses import DeliveryStatus
from tests.support.api import API
from tests.support.dashboard import post


def api_key(sessions, email: str) -> str:
    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == email)).one()
        return keys.create_key(s, mid, "test", ["payments:create", "payments:read", "webhooks:manage"]).key


def made(app, key: str, path: str, body: dict) -> dict:
    r = app.test_client().post(f"{API}{path}", json=body, headers={"X-Api-Key": key})
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def event_of(sessions, payment: dict) -> str:
    with sessions() as s:
        return s.scalars(
            sa.select(Event.id).where(Event.payment_id == payment["id"], Event.type == "payment.created")
        ).one()


def test_the_log_lists_this_merchants_events_and_filters_by_type(dash, sessions, app, make_merchant, client):
    key = api_key(sessions, dash.email)
    mine = made(app, key, "/payments", {"amount": 3, "token": "USDC", "network": "BASE"})
    other = make_merchant()
    theirs = client.post(
        f"{API}/payments", json={"amount": 4, "token": "USDC", "network": "BASE"}, headers=other.headers()
    ).get_json()["data"]
    page = dash.get("/dashboard/events").get_data(as_text=True)
    assert event_of(sessions, mine) in page and mine["short_id"] in page
    assert event_of(sessions, theirs) not in page and theirs["short_id"] not in page
    assert "No events." in dash.get("/dashboard/events?type=payment.completed").get_data(as_text=True)


def test_resend_queues_the_event_for_the_chosen_endpoint(dash, sessions, app):
    key = api_key(sessions, dash.email)
    p = made(app, key, "/payments", {"amount": 3, "token": "USDC", "network": "BASE"})
    hook = made(app, key, "/webhooks", {"url": "https://hooks.example.com/k", "events": ["payment.completed"]})
    event_id = event_of(sessions, p)
    detail = dash.get(f"/dashboard/events/{event_id}").get_data(as_text=True)
    assert "https://hooks.example.com/k" in detail and "Not delivered anywhere." in detail
    assert f'"id": "{event_id}"' in detail  # the body, as its webhooks carry it

    r = post(dash, f"/dashboard/events/{event_id}/resend", webhook_id=hook["id"])
    assert r.status_code == 303
    with sessions() as s:
        delivery = s.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)).one()
    assert (str(delivery.endpoint_id), delivery.status) == (hook["id"], DeliveryStatus.PENDING)
    assert delivery.next_attempt_at is not None
    assert "Queued" in dash.get(r.headers["Location"]).get_data(as_text=True)

    with unit_of_work(sessions) as s:  # delivered since; resend again: the same delivery, due again
        s.execute(
            sa.update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery.id)
            .values(status=DeliveryStatus.SUCCEEDED, next_attempt_at=None)
        )
    assert post(dash, f"/dashboard/events/{event_id}/resend", webhook_id=hook["id"]).status_code == 303
    with sessions() as s:
        again = s.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)).all()
    assert [(d.id, d.status) for d in again] == [(delivery.id, DeliveryStatus.PENDING)]


def test_resend_needs_the_csrf_token(dash, sessions, app):
    key = api_key(sessions, dash.email)
    p = made(app, key, "/payments", {"amount": 3, "token": "USDC", "network": "BASE"})
    hook = made(app, key, "/webhooks", {"url": "https://hooks.example.com/c"})
    event_id = event_of(sessions, p)
    assert dash.post(f"/dashboard/events/{event_id}/resend", data={"webhook_id": hook["id"]}).status_code == 403
    with sessions() as s:
        assert (
            s.scalar(
                sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.event_id == event_id)
            )
            == 0
        )


def test_resend_to_a_disabled_or_unknown_endpoint_says_why_and_queues_nothing(dash, sessions, app):
    key = api_key(sessions, dash.email)
    p = made(app, key, "/payments", {"amount": 3, "token": "USDC", "network": "BASE"})
    off = made(app, key, "/webhooks", {"url": "https://hooks.example.com/off", "active": False})
    event_id = event_of(sessions, p)
    r = post(dash, f"/dashboard/events/{event_id}/resend", webhook_id=off["id"])
    assert r.status_code == 422 and "disabled" in r.get_data(as_text=True)
    r = post(dash, f"/dashboard/events/{event_id}/resend", webhook_id="not-an-endpoint")
    assert r.status_code == 422 and "webhook not found" in r.get_data(as_text=True)
    with sessions() as s:
        assert (
            s.scalar(
                sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.event_id == event_id)
            )
            == 0
        )


def test_another_merchants_event_is_the_404_page(dash, sessions, make_merchant, client):
    other = make_merchant()
    theirs = client.post(
        f"{API}/payments", json={"amount": 4, "token": "USDC", "network": "BASE"}, headers=other.headers()
    ).get_json()["data"]
    event_id = event_of(sessions, theirs)
    for r in (dash.get(f"/dashboard/events/{event_id}"), post(dash, f"/dashboard/events/{event_id}/resend")):
        assert r.status_code == 404 and "No such event in this mode" in r.get_data(as_text=True)
