"""Outbox relay → RabbitMQ → settler, and the expirer's jobs, in-process against real
PostgreSQL and RabbitMQ (each test run on its own exchange and queues)."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from functools import partial

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.publisher import Publisher
from kassa_common.messaging.relay import relay_pending, relay_process, wake_relay
from kassa_common.models import Event, Payment, Transfer
from kassa_common.statuses import TransferStatus
from kassa_expirer.jobs import Jobs
from tests.support.api import LIVE_PAYMENT
from tests.support.bus import bus, queue_depth, running_settler  # noqa: F401  (fixture)
from tests.support.transfers import report
from tests.support.wait import until


@pytest.fixture
def settler(bus, settings, sessions):
    """The settler running; its consumer of the chain's reports, to hand messages to directly."""
    with running_settler(settings, bus[1], sessions) as consumers:
        yield consumers[0]


def new_payment(client, merchant, **body):
    r = client.post(
        "/v1/api/payments", json={"amount": 10, "token": "USDC", "network": "BASE", **body}, headers=merchant.headers()
    )
    assert r.status_code == 201, r.json
    return r.json["data"]


def status_of(sessions, pid) -> str:
    with sessions() as s:
        return s.scalar(sa.select(Payment.status).where(Payment.id == uuid.UUID(pid)))


def events_of(sessions, pid) -> list[str]:
    with sessions() as s:
        return list(
            s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(pid)).order_by(Event.created_at))
        )


def test_relay_publishes_committed_events_and_marks_them(client, merchant, sessions, bus, settings):
    _, topo, publisher = bus
    p = new_payment(client, merchant)
    assert relay_pending(sessions, publisher) >= 1
    with sessions() as s:
        published = s.scalar(sa.select(Event.published_at).where(Event.payment_id == uuid.UUID(p["id"])))
    assert published is not None
    assert until(lambda: queue_depth(settings.rabbitmq_url, topo.webhook_intake.name) >= 1)


def test_test_payment_completes_through_the_settler(client, merchant, sessions, bus, settler):
    _, _, publisher = bus
    p = new_payment(client, merchant)
    jobs = Jobs(sessions, test_complete_after=timedelta(0))
    assert jobs.complete_test_payments() >= 1
    relay_pending(sessions, publisher)
    until(lambda: status_of(sessions, p["id"]) == "COMPLETED", message="payment completed")
    with sessions() as s:
        pay = s.get(Payment, uuid.UUID(p["id"]))
        assert pay.transaction_hash.startswith("test_tx_")
        assert pay.amount_received_units == pay.crypto_amount_units
    assert events_of(sessions, p["id"])[-1] == "payment.completed"


def test_redelivered_transfer_changes_nothing(client, merchant, sessions, settler):
    p = new_payment(client, merchant)
    from kassa_common.messaging.consumer import Delivered

    body = {
        "network": "BASE",
        "tx_hash": "0x" + "ab" * 32,
        "log_index": 1,
        "token": "USDC",
        "to": p["address"],
        "amount_units": "4000000",
        "confirmations": 10,
    }
    msg = Delivered("msg-" + uuid.uuid4().hex, "chain.transfer.confirmed", body, 1)
    settler.handle(msg)
    settler.handle(msg)  # the same message again
    settler.handle(Delivered("msg-" + uuid.uuid4().hex, "chain.transfer.confirmed", body, 1))  # same transfer
    with sessions() as s:
        pay = s.get(Payment, uuid.UUID(p["id"]))
        assert pay.status == "PARTIALLY_PAID" and int(pay.amount_received_units) == 4_000_000
        assert s.scalar(sa.select(sa.func.count()).select_from(Transfer).where(Transfer.payment_id == pay.id)) == 1
    assert events_of(sessions, p["id"]).count("payment.partially_paid") == 1


def test_expirer_expires_overdue_payments_once(client, merchant, sessions):
    p = new_payment(client, merchant)
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment)
            .where(Payment.id == uuid.UUID(p["id"]))
            .values(expires_at=sa.func.now() - sa.text("interval '1 minute'"), test_auto_complete=False)
        )
    jobs = Jobs(sessions, test_complete_after=timedelta(hours=1))
    while jobs.expire():
        pass
    assert status_of(sessions, p["id"]) == "EXPIRED"
    assert events_of(sessions, p["id"]) == ["payment.created", "payment.expired"]
    assert jobs.expire() == 0 or events_of(sessions, p["id"]).count("payment.expired") == 1


def test_a_seen_transfer_holds_an_overdue_payment_open(client, merchant, sessions, settler):
    from kassa_common.messaging.consumer import Delivered

    p = new_payment(client, merchant)
    body = {
        "network": "BASE",
        "tx_hash": "0x" + "cd" * 32,
        "log_index": 0,
        "token": "USDC",
        "to": p["address"],
        "amount_units": "10000000",
        "confirmations": 1,
    }
    settler.handle(Delivered(uuid.uuid4().hex, "chain.transfer.seen", body, 1))
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment)
            .where(Payment.id == uuid.UUID(p["id"]))
            .values(expires_at=sa.func.now() - sa.text("interval '1 minute'"))
        )
    jobs = Jobs(sessions, test_complete_after=timedelta(hours=1))
    while jobs.expire():
        pass
    assert status_of(sessions, p["id"]) == "PENDING"
    settler.handle(Delivered(uuid.uuid4().hex, "chain.transfer.confirmed", {**body, "confirmations": 10}, 1))
    assert status_of(sessions, p["id"]) == "COMPLETED"
    assert events_of(sessions, p["id"]) == ["payment.created", "payment.detected", "payment.completed"]


def test_the_settler_wakes_the_relay_process_which_publishes_at_once(client, merchant, sessions, engine, bus, settings):
    """The settler publishes nothing itself: after each commit it wakes the relay process
    (NOTIFY), whose relay publishes payment.completed at once (its poll here is a minute)."""
    _, topo, publisher = bus
    p = new_payment(client, merchant)
    stop = threading.Event()
    relay_publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
    relay = threading.Thread(target=relay_process, args=(engine, sessions, relay_publisher, stop), kwargs={"poll": 60})
    relay.start()
    try:
        with running_settler(settings, topo, sessions, after_commit=partial(wake_relay, engine)):
            until(lambda: relay_pending(sessions, publisher) == 0)  # drained the relay's first round
            jobs = Jobs(sessions, test_complete_after=timedelta(0))
            assert jobs.complete_test_payments() >= 1
            wake_relay(engine)  # the simulated transfer reaches the settler through the relay too

            def completed_published():
                with sessions() as s:
                    return s.scalar(
                        sa.select(Event.published_at).where(
                            Event.payment_id == uuid.UUID(p["id"]), Event.type == "payment.completed"
                        )
                    )

            until(completed_published, timeout=10, message="payment.completed published by the woken relay")
    finally:
        stop.set()
        relay.join(10)
    assert not relay.is_alive()


def test_a_relay_woken_by_nobody_still_publishes_at_its_poll(client, merchant, sessions, engine, bus, settings):
    """The web wakes nobody: the relay process's poll publishes its events."""
    _, topo, _ = bus
    stop = threading.Event()
    relay_publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
    relay = threading.Thread(target=relay_process, args=(engine, sessions, relay_publisher, stop), kwargs={"poll": 0.2})
    relay.start()
    try:
        p = new_payment(client, merchant)
        with sessions() as s:
            query = sa.select(Event.published_at).where(Event.payment_id == uuid.UUID(p["id"]))
            until(lambda: s.scalar(query) is not None, timeout=10, message="payment.created published")
    finally:
        stop.set()
        relay.join(10)


def test_a_burst_of_test_payments_does_not_hold_up_a_live_one(
    client, merchant, live_merchant, create_payment, sessions, bus, settings
):
    """Test mode's simulated transfers wait in a queue of their own: a tester completing
    hundreds of payments at once must not delay the live confirmations behind them."""
    _, topo, publisher = bus
    burst = {new_payment(client, merchant)["id"] for _ in range(300)}
    live = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    jobs = Jobs(sessions, test_complete_after=timedelta(0))
    while jobs.complete_test_payments():
        pass
    relay_pending(sessions, publisher)  # the burst's reports are on the bus first, then the live one's
    publisher.publish_batch([report(live, TransferStatus.CONFIRMED, 12_340_000, confirmations=10).to_message()])

    with running_settler(settings, topo, sessions):
        until(lambda: status_of(sessions, live["id"]) == "COMPLETED", timeout=30, message="live payment completed")
        with sessions() as s:
            done = s.scalar(
                sa.select(sa.func.count())
                .select_from(Payment)
                .where(Payment.id.in_([uuid.UUID(i) for i in burst]), Payment.status == "COMPLETED")
            )
        assert done < len(burst) / 2, f"the live payment waited for {done} of {len(burst)} test payments"
        until(
            lambda: all(status_of(sessions, i) == "COMPLETED" for i in burst),
            timeout=60,
            message="the burst completed as well",
        )
