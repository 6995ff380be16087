"""GET /events and GET /events/:id (DESIGN.md §3 "Events"): the merchant's payment events of
the last 30 days, per mode, newest first, as their webhooks carried them; filters, pages,
isolation between merchants and modes, 404s, scope."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Event
from kassa_common.timefmt import iso, utcnow
from tests.support.api import API, assert_error, detail_fields, new_key


def events(client, merchant, mode="test", **query) -> dict:
    r = client.get(f"{API}/events", query_string=query, headers=merchant.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    body = r.get_json()
    assert body["success"] is True and body["statusCode"] == 200
    return body["data"]


def cancel(client, merchant, p, mode="test") -> None:
    r = client.post(f"{API}/payments/{p['id']}/cancel", headers=merchant.headers(mode))
    assert r.status_code == 200


@pytest.fixture
def two_payments(client, merchant, create_payment):
    """Two test payments of ``merchant``, the second canceled: three events, newest first."""
    first = create_payment(merchant)
    second = create_payment(merchant)
    cancel(client, merchant, second)
    return first, second


def test_events_are_listed_newest_first_as_their_webhooks_carried_them(client, sessions, merchant, two_payments):
    first, second = two_payments
    page = events(client, merchant)
    assert [(e["event"], e["data"]["payment_id"]) for e in page["data"]] == [
        ("payment.canceled", second["id"]),
        ("payment.created", second["id"]),
        ("payment.created", first["id"]),
    ]
    assert page["meta"] == {"page": 1, "pageSize": 10, "total": 3, "pages": 1}
    newest = page["data"][0]
    with sessions() as s:
        assert newest == s.get(Event, newest["id"]).payload  # the webhook body, byte for byte the same JSON
    assert newest["id"].startswith("evt_") and newest["test_mode"] is True
    assert newest["data"]["status"] == "CANCELED" and newest["data"]["metadata"] == {}


def test_filter_by_type_and_by_payment(client, merchant, two_payments):
    first, second = two_payments
    assert [e["data"]["payment_id"] for e in events(client, merchant, type="payment.created")["data"]] == [
        second["id"],
        first["id"],
    ]
    assert [e["event"] for e in events(client, merchant, payment_id=second["id"])["data"]] == [
        "payment.canceled",
        "payment.created",
    ]
    only = events(client, merchant, type="payment.canceled", payment_id=first["id"])
    assert only == {"data": [], "meta": {"page": 1, "pageSize": 10, "total": 0, "pages": 0}}


def test_filter_by_creation_time(client, sessions, merchant, create_payment):
    old, new = create_payment(merchant), create_payment(merchant)
    ten_days_ago = (utcnow() - timedelta(days=10)).replace(microsecond=0)
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Event).where(Event.payment_id == uuid.UUID(old["id"])).values(created_at=ten_days_ago))
    since = events(client, merchant, created_gte=iso(ten_days_ago + timedelta(days=1)))
    assert [e["data"]["payment_id"] for e in since["data"]] == [new["id"]]
    until = events(client, merchant, created_lte=iso(ten_days_ago))
    assert [e["data"]["payment_id"] for e in until["data"]] == [old["id"]]
    naive_utc = (ten_days_ago - timedelta(seconds=1)).replace(tzinfo=None).isoformat()
    assert events(client, merchant, created_gte=naive_utc, created_lte=iso(ten_days_ago))["meta"]["total"] == 1


def test_events_older_than_30_days_are_gone_from_list_and_get(client, sessions, merchant, create_payment):
    p = create_payment(merchant)
    with unit_of_work(sessions) as s:
        event_id = s.scalars(
            sa.update(Event)
            .where(Event.payment_id == uuid.UUID(p["id"]))
            .values(created_at=utcnow() - timedelta(days=31))
            .returning(Event.id)
        ).one()
    assert events(client, merchant)["meta"]["total"] == 0
    assert_error(client.get(f"{API}/events/{event_id}", headers=merchant.headers()), 404, "NOT_FOUND")


def test_pages(client, merchant, two_payments):
    newest_first = [e["id"] for e in events(client, merchant)["data"]]
    pages = [events(client, merchant, page=n, pageSize=2) for n in (1, 2, 3)]
    assert [e["id"] for pg in pages for e in pg["data"]] == newest_first
    assert pages[0]["meta"] == {"page": 1, "pageSize": 2, "total": 3, "pages": 2} and pages[2]["data"] == []


def test_get_one_event(client, merchant, two_payments):
    listed = events(client, merchant)["data"][0]
    r = client.get(f"{API}/events/{listed['id']}", headers=merchant.headers())
    assert r.status_code == 200 and r.get_json() == {"success": True, "statusCode": 200, "data": listed}


def test_another_merchants_events_are_neither_listed_nor_found(client, merchant, make_merchant, two_payments):
    other = make_merchant()
    assert events(client, other)["data"] == []
    assert events(client, other, payment_id=two_payments[0]["id"])["meta"]["total"] == 0
    theirs = events(client, merchant)["data"][0]["id"]
    assert_error(client.get(f"{API}/events/{theirs}", headers=other.headers()), 404, "NOT_FOUND")


def test_the_other_modes_events_are_neither_listed_nor_found(client, merchant, two_payments):
    assert events(client, merchant, mode="live")["data"] == []
    test_event = events(client, merchant)["data"][0]["id"]
    assert_error(client.get(f"{API}/events/{test_event}", headers=merchant.headers("live")), 404, "NOT_FOUND")


@pytest.mark.parametrize("ref", ["evt_doesnotexist", "nope", "x" * 300])
def test_unknown_event_ids_are_404(client, merchant, ref):
    error = assert_error(client.get(f"{API}/events/{ref}", headers=merchant.headers()), 404, "NOT_FOUND")
    assert error["message"] == "event not found"


def test_internal_messages_are_not_events(client, sessions, merchant, create_payment):
    """A test payment's simulated transfer travels through the outbox too: it is no event."""
    from kassa_common import payments

    p = create_payment(merchant)
    with unit_of_work(sessions) as s:
        payments.pay(s, payments.find_payment(s, _owner(merchant), p["id"]))
    with sessions() as s:
        internal = s.scalars(
            sa.select(Event.id).where(Event.payment_id == uuid.UUID(p["id"]), ~Event.type.like("payment.%"))
        ).all()
    assert internal, "pay() writes the simulated transfer to the outbox"
    assert [e["event"] for e in events(client, merchant)["data"]] == ["payment.created"]
    assert_error(client.get(f"{API}/events/{internal[0]}", headers=merchant.headers()), 404, "NOT_FOUND")


def _owner(merchant):
    from kassa_common.owner import Owner

    return Owner(merchant.id, True, 60)


@pytest.mark.parametrize(
    "query, field",
    [
        ({"type": "payment.nope"}, "type"),
        ({"payment_id": "not-a-uuid"}, "payment_id"),
        ({"created_gte": "yesterday"}, "created_gte"),
        ({"created_lte": "2026-13-01T00:00:00Z"}, "created_lte"),
        ({"pageSize": "101"}, "pageSize"),
        ({"page": "0"}, "page"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(client, merchant, query, field):
    r = client.get(f"{API}/events", query_string=query, headers=merchant.headers())
    assert field in detail_fields(assert_error(r, 400, "BAD_REQUEST"))


def test_events_need_the_payments_read_scope(client, sessions, merchant):
    key = new_key(sessions, merchant.id, "test", ["payments:create"])
    assert_error(client.get(f"{API}/events", headers={"X-Api-Key": key}), 403, "FORBIDDEN")
    assert_error(client.get(f"{API}/events/evt_x", headers={"X-Api-Key": key}), 403, "FORBIDDEN")
    assert_error(client.get(f"{API}/events"), 401, "UNAUTHORIZED")


def test_events_are_in_the_openapi_document(client):
    doc = client.get(f"{API}/openapi.json").get_json()
    listed = doc["paths"]["/events"]["get"]
    assert {p["name"] for p in listed["parameters"]} == {
        "page",
        "pageSize",
        "type",
        "payment_id",
        "created_gte",
        "created_lte",
    }
    assert doc["paths"]["/events/{event_id}"]["get"]["responses"]["404"]
