"""A refund's emails through the real pipeline (outbox → relay → the notifier's queue →
notifications → a real SMTP server): the claim link to the payment's customer_email on
refund.created (a test refund's to the merchant instead), "refund claimed: pay it" to the
merchant on refund.claimed."""

from __future__ import annotations

import re

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Event, Merchant, Notification
from tests.support.api import API, LIVE_PAYMENT
from tests.support.bus import bus  # noqa: F401 (fixture)
from tests.support.notifications import DASHBOARD, arrives, customer, notifier, settler  # noqa: F401 (fixtures)
from tests.support.refunds import GOOD, claim, path_of, settle_confirmed
from tests.support.smtp import smtp  # noqa: F401 (fixture)
from tests.support.wait import until


def refund_mail(inbox, address: str) -> list:
    """The refund emails to ``address`` (the payment's own, its receipt, are left out)."""
    return [msg for msg in inbox.to(address) if "refund" in msg["Subject"].lower()]


def refund_notifications(sessions, refund_id: str) -> list[tuple[str, str, str]]:
    with sessions() as s:
        rows = s.execute(
            sa.select(Event.type, Notification.kind, Notification.status)
            .join(Notification, Notification.event_id == Event.id)
            .where(Event.type.like("refund.%"), Event.payload["data"]["id"].astext == refund_id)
            .order_by(Event.created_at)
        )
        return [tuple(r) for r in rows]


def test_the_customer_gets_the_claim_link_and_the_merchant_the_pay_it_email(
    client, live_merchant, sessions, bus, smtp, notifier
):
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    m = live_merchant
    with unit_of_work(sessions) as s:
        s.get(Merchant, m.id).business_name = "Corner Shop"
    buyer = customer()
    body = {**LIVE_PAYMENT, "customer_email": buyer, "customer_name": "Jane\nBcc: all@evil.example"}
    r = client.post(f"{API}/payments", json=body, headers=m.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)
    p = r.get_json()["data"]
    settle_confirmed(sessions, p, 15_000_000)
    r = client.post(
        f"{API}/payments/{p['id']}/refunds",
        json={"amount": "2.66", "reason": "over-paid"},
        headers=m.headers("live"),
    )
    refund = r.get_json()["data"]

    [link] = arrives(sessions, publisher, lambda: refund_mail(inbox, buyer))
    assert link["Subject"] == "Your refund from Corner Shop: claim it"
    body = link.get_body(("plain",)).get_content()
    assert "Hello Jane Bcc: all@evil.example," in body and "2.66 USDC" in body and p["short_id"] in body
    # the link is read from the refund: events no longer carry it
    assert refund["claim_url"] in body and "over-paid" not in body  # the reason is the merchant's
    assert refund["claim_url"] in link.get_body(("html",)).get_content()

    # the customer follows the link and claims
    assert claim(client, refund, GOOD).status_code == 303
    [pay_it] = arrives(sessions, publisher, lambda: refund_mail(inbox, m.email))
    due = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers("live")).get_json()["data"]["payout_amount"]
    assert due.startswith("2.66") and due != "2.66"  # the amount and its tag: exactly what to pay
    assert pay_it["Subject"] == f"Refund claimed: pay {due} USDC on LOCAL_EVM"
    text = pay_it.get_body(("plain",)).get_content()
    assert GOOD in text and f"{due} USDC" in text and "over-paid" in text and p["short_id"] in text
    assert f"{DASHBOARD}/payments/{p['short_id']}" in text and refund["claim_url"] not in text
    until(
        lambda: (
            refund_notifications(sessions, refund["id"])
            == [("refund.created", "customer", "SENT"), ("refund.claimed", "merchant", "SENT")]
        ),
        timeout=10,
        message="both emails recorded SENT",
    )
    assert refund_mail(inbox, buyer) == [link]  # the claim sends the customer nothing more


def test_a_test_refunds_claim_link_goes_to_the_merchant_never_the_customer(
    client, make_merchant, paid_payment, sessions, bus, smtp, notifier
):
    """Test mode never emails a customer (DESIGN §10): a test key is no mail relay."""
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    m = make_merchant(business_name="Corner Shop")
    buyer = customer()
    p = paid_payment(m, customer_email=buyer, customer_name="Jane")
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "2.66"}, headers=m.headers())
    refund = r.get_json()["data"]

    [link] = arrives(sessions, publisher, lambda: refund_mail(inbox, m.email))
    assert link["Subject"] == "[TEST] Your refund from Corner Shop: claim it" and link["To"] == m.email
    body = link.get_body(("plain",)).get_content()
    assert f"your customer ({buyer}) would get" in body and "no funds move" in body
    assert refund["claim_url"] in body
    until(
        lambda: refund_notifications(sessions, refund["id"]) == [("refund.created", "customer", "SENT")],
        timeout=10,
        message="the email recorded SENT",
    )
    assert inbox.to(buyer) == []


def test_without_a_customer_email_there_is_no_claim_link_email_but_the_merchant_still_hears(
    client, make_merchant, paid_payment, sessions, bus, smtp, notifier
):
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    m = make_merchant()
    p = paid_payment(m)
    refund = client.post(f"{API}/payments/{p['id']}/refunds", json={}, headers=m.headers()).get_json()["data"]
    with sessions() as s:  # the merchant turned notifications off: "pay it" still comes
        s.execute(sa.text("UPDATE merchants SET notify_email = false WHERE id = :id"), {"id": m.id})
        s.commit()
    assert claim(client, refund, GOOD).status_code == 303
    [pay_it] = arrives(sessions, publisher, lambda: refund_mail(inbox, m.email))
    assert re.match(r"\[TEST\] Refund claimed: pay 15\.000\d+ USDC on BASE", pay_it["Subject"])
    assert [kind for _, kind, _ in refund_notifications(sessions, refund["id"])] == ["merchant"]
    assert client.get(path_of(refund)).status_code == 200
