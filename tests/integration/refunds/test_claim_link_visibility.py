"""The claim link is a bearer capability (DESIGN §8): whoever opens it first says where the
refund goes. ``claim_url`` reaches refunds:manage keys and the dashboard only; events (GET
/events needs only payments:read) and webhooks carry the refund without it, with
``claimable``. An event stored before this rule, with a claim link, is shown and sent
without it too."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import Event, Merchant
from kassa_client import verify_signature
from tests.conftest import MerchantKeys, make_key
from tests.support.api import API
from tests.support.bus import bus  # noqa: F401 (fixture)
from tests.support.dashboard import signed_in
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.refunds import GOOD, claim
from tests.support.wait import until
from tests.support.webhooks import add_endpoint, running_sender


def token_of(refund: dict) -> str:
    return refund["claim_url"].rsplit("/", 1)[1]


def store_claim_link_in_events(sessions, refund: dict) -> None:
    """Put the claim link back into the refund's stored events, as events were written before
    this rule (and still sit in the events table and the outbox)."""
    with unit_of_work(sessions) as s:
        s.execute(
            sa.text(
                "UPDATE events SET payload = jsonb_set(payload #- '{data,claimable}', '{data,claim_url}', "
                "to_jsonb(CAST(:url AS text))) WHERE type LIKE 'refund.%' AND payload->'data'->>'id' = :id"
            ),
            {"url": refund["claim_url"], "id": refund["id"]},
        )


def reader_headers(sessions, merchant) -> dict[str, str]:
    return {"X-Api-Key": make_key(sessions, merchant.id, "test", ["payments:read"])}


def test_a_read_only_key_finds_no_claim_link_in_the_events(
    client, make_merchant, paid_payment, create_refund, sessions
):
    m = make_merchant()
    reader = reader_headers(sessions, m)
    p = paid_payment(m, 10_000_000)
    waiting = create_refund(m, p["id"], {"amount": "1"})
    claimed = create_refund(m, p["id"], {"amount": "2"})
    assert claim(client, claimed, GOOD).status_code == 303
    old = create_refund(m, p["id"], {"amount": "3"})
    store_claim_link_in_events(sessions, old)  # an event row written before the rule
    tokens = [token_of(r) for r in (waiting, claimed, old)]

    r = client.get(f"{API}/events", query_string={"payment_id": p["id"], "pageSize": 100}, headers=reader)
    assert r.status_code == 200
    body = r.get_data(as_text=True)
    assert [t for t in tokens if t in body] == [] and "claim_url" not in body
    shown = {(e["event"], e["data"]["id"]): e for e in r.get_json()["data"]["data"]}
    assert shown[("refund.created", waiting["id"])]["data"]["claimable"] is True
    assert shown[("refund.created", claimed["id"])]["data"]["claimable"] is True
    assert shown[("refund.claimed", claimed["id"])]["data"]["claimable"] is False
    assert shown[("refund.created", old["id"])]["data"]["claimable"] is True
    for event in shown.values():  # one by one, too
        one = client.get(f"{API}/events/{event['id']}", headers=reader)
        assert one.status_code == 200 and [t for t in tokens if t in one.get_data(as_text=True)] == []

    # the read-only key cannot read the refunds themselves; a refunds:manage key gets the link
    assert client.get(f"{API}/refunds/{waiting['id']}", headers=reader).status_code == 403
    manager = {"X-Api-Key": make_key(sessions, m.id, "test", ["refunds:manage"])}
    got = client.get(f"{API}/refunds/{waiting['id']}", headers=manager).get_json()["data"]
    assert (got["claim_url"], got["claimable"]) == (waiting["claim_url"], True)
    assert waiting["claimable"] is True and "/refunds/" in waiting["claim_url"]  # the POST's answer has it
    listed = client.get(f"{API}/payments/{p['id']}/refunds", headers=manager).get_json()["data"]
    assert {r["id"]: r["claim_url"] for r in listed}[old["id"]] == old["claim_url"]
    canceled = client.post(f"{API}/refunds/{old['id']}/cancel", headers=manager).get_json()["data"]
    assert (canceled["claim_url"], canceled["claimable"]) == (old["claim_url"], False)


def test_the_dashboards_events_log_shows_the_body_without_the_claim_link(client, paid_payment, create_refund, sessions):
    dash = signed_in(client, sessions, mode="test")
    with sessions() as s:
        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == dash.email))
    m = MerchantKeys(merchant_id, dash.email, {"test": make_key(sessions, merchant_id, "test", list(keys.SCOPES))})
    p = paid_payment(m, 10_000_000)
    old = create_refund(m, p["id"], {"amount": "1"})
    store_claim_link_in_events(sessions, old)
    with sessions() as s:
        event_id = s.scalar(sa.select(Event.id).where(Event.type == "refund.created", Event.payment_id == p["id"]))
    page = client.get(f"/dashboard/events/{event_id}")
    assert page.status_code == 200 and token_of(old) not in page.get_data(as_text=True)
    # the refund's own page, for the merchant, still has it
    assert token_of(old) in client.get(f"/dashboard/refunds/{old['id']}").get_data(as_text=True)


@pytest.fixture
def sender(settings, engine, bus):
    with running_sender(settings, engine, bus[0], threads=2) as s:
        yield s


def test_a_webhook_delivery_carries_no_claim_link(
    client, make_merchant, paid_payment, create_refund, sessions, bus, sender, receiver
):
    _, _, publisher = bus
    m = make_merchant()
    hook = add_endpoint(sessions, m.id, receiver.url, events=["refund.created", "refund.claimed"])
    p = paid_payment(m, 10_000_000)
    fresh = create_refund(m, p["id"], {"amount": "1"})
    old = create_refund(m, p["id"], {"amount": "2"})
    store_claim_link_in_events(sessions, old)  # stored with its link, not yet delivered
    assert claim(client, fresh, GOOD).status_code == 303

    def hits():
        relay_pending(sessions, publisher)
        return [h for h in receiver.all() if h.headers["X-Kassa-Event"].startswith("refund.")]

    got = until(lambda: len(hits()) >= 3 and hits(), timeout=30, message="three refund webhooks")
    for h in got:
        assert token_of(fresh).encode() not in h.body and token_of(old).encode() not in h.body
        assert b"claim_url" not in h.body
        assert verify_signature(hook.secret, h.headers["X-Kassa-Signature"], h.body)  # signed as sent
    claimable = {(h.headers["X-Kassa-Event"], h.json["data"]["id"]): h.json["data"]["claimable"] for h in got}
    assert claimable == {
        ("refund.created", fresh["id"]): True,
        ("refund.created", old["id"]): True,
        ("refund.claimed", fresh["id"]): False,
    }
