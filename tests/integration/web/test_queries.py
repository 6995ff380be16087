"""The pages' read functions on real PostgreSQL: what each returns, for whom, in what order."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.db import unit_of_work
from kassa_common.models import Payment, WebhookDelivery, WebhookEndpoint
from kassa_common.payments import reports
from kassa_common.timefmt import utcnow
from tests.support.api import API, PAYMENT


def test_api_keys_are_the_merchants_own_of_both_modes_newest_first(make_merchant, sessions):
    mine = make_merchant()
    make_merchant()  # another merchant's keys exist and are left out
    with unit_of_work(sessions) as s:
        newest = keys.create_key(s, mine.id, "test", ["payments:read"], "newest").row
    with sessions() as s:
        listed = keys.api_keys(s, mine.id)
    assert listed[0].id == newest.id and len(listed) == 3
    assert {k.mode for k in listed} == {"test", "live"}
    assert {k.merchant_id for k in listed} == {mine.id}
    assert [k.created_at for k in listed] == sorted((k.created_at for k in listed), reverse=True)


def test_wallets_are_those_of_the_mode_asked_for(make_merchant, sessions):
    m = make_merchant()
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, m.id, "test", "evm", TEST_XPUBS["evm"])
    with sessions() as s:
        assert {c: w.xpub for c, w in merchants.wallets(s, m.id, "test").items()} == {"evm": TEST_XPUBS["evm"]}
        assert merchants.wallets(s, m.id, "live") == {}


def test_payment_history_has_its_events_in_order_and_their_deliveries(client, merchant, sessions):
    short_id = client.post(f"{API}/payments", json=PAYMENT, headers=merchant.headers()).json["data"]["short_id"]
    assert client.post(f"{API}/payments/{short_id}/cancel", headers=merchant.headers()).status_code == 200
    with unit_of_work(sessions) as s:
        payment = s.scalars(sa.select(Payment).where(Payment.short_id == short_id)).one()
        created = reports.payment_history(s, payment.id).events[0]
        now = utcnow()
        hook = WebhookEndpoint(
            id=uuid.uuid4(),
            merchant_id=merchant.id,
            test_mode=True,
            url="https://h.example.com/k",
            events=["payment.created"],
            secret="whsec_x",
            created_at=now,
            updated_at=now,
        )
        s.add(hook)
        s.flush()
        s.add(
            WebhookDelivery(
                id=uuid.uuid4(),
                endpoint_id=hook.id,
                event_id=created.id,
                event_type=created.type,
                status="PENDING",
                attempts=0,
                created_at=now,
                updated_at=now,
            )
        )
        payment_id = payment.id
    with sessions() as s:
        history = reports.payment_history(s, payment_id)
    assert [e.type for e in history.events] == ["payment.created", "payment.canceled"]
    assert [(d.event_id, url) for d, url in history.deliveries] == [(created.id, "https://h.example.com/k")]
