"""Webhook test kit: a real HTTP receiver, rows written directly (endpoints, events,
deliveries through intake), dispatchers on a fast retry schedule, and queries."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.ids import new_event_id, new_webhook_secret
from kassa_common.messaging.consumer import Delivered
from kassa_common.messaging.messages import PAYMENT_EVENTS, EventEnvelope, EventType
from kassa_common.messaging.publisher import Message, Publisher
from kassa_common.models import DeliveryAttempt, Event, WebhookDelivery, WebhookEndpoint
from kassa_common.timefmt import iso, utcnow
from kassa_webhook_sender.engine.dispatcher import Dispatcher
from kassa_webhook_sender.engine.retry import RetryPolicy
from kassa_webhook_sender.webhooks.channel import Webhooks
from kassa_webhook_sender.webhooks.intake import handle_event
from kassa_webhook_sender.webhooks.main import build
from kassa_webhook_sender.webhooks.transport import Transport
from tests.support.receiver import Hit, Receiver  # noqa: F401  (re-exported for the tests)

FAST = RetryPolicy(delays=(0.2, 0.2), repeat_every=0.2, give_up_after=60)


# -- the dispatcher fixture (import it into a test module, with the receiver's) -------------
#
#     from tests.support.webhooks import dispatcher, receiver


def webhook_dispatcher(sessions, *, allow_private: bool = True, **options) -> Dispatcher:
    """A dispatcher of webhooks (5 s a request), not started; ``options`` are the
    ``Dispatcher``'s (threads, retry, lease_seconds, poll_interval)."""
    return Dispatcher(sessions, Webhooks(Transport(timeout=5, allow_private=allow_private)), **options)


@pytest.fixture
def dispatcher(sessions):
    """``dispatcher()`` starts one on ``FAST`` retries, polling every 50 ms (stopped after the test)."""
    started: list[Dispatcher] = []

    def make(*, allow_private: bool = True, retry: RetryPolicy = FAST) -> Dispatcher:
        d = webhook_dispatcher(sessions, allow_private=allow_private, threads=8, retry=retry, poll_interval=0.05)
        started.append(d.start())
        return d

    yield make
    for d in started:
        d.stop()


@contextmanager
def running_sender(settings, engine, bus_prefix: str, *, threads: int):
    """The webhook sender as its process builds it, on the bus ``bus_prefix``, private URLs
    allowed, retrying on ``FAST``; started for the block, stopped after it."""
    s = build(
        settings.with_(bus_prefix=bus_prefix, sender={"webhook_allow_private_urls": True}),
        engine=engine,
        retry=FAST,
        threads=threads,
        poll_interval=0.05,
    ).start()
    try:
        yield s
    finally:
        s.stop()


# -- rows and queries ----------------------------------------------------------------------


def add_endpoint(
    sessions, merchant_id, url, *, events=PAYMENT_EVENTS, test_mode=True, active=True, deleted=False
) -> WebhookEndpoint:
    with unit_of_work(sessions) as s:
        hook = WebhookEndpoint(
            id=uuid.uuid4(),
            merchant_id=merchant_id,
            test_mode=test_mode,
            url=url,
            events=list(events),
            active=active,
            secret=new_webhook_secret(),
            deleted_at=utcnow() if deleted else None,
        )
        s.add(hook)
    return hook


def add_event(sessions, merchant_id, event_type="payment.completed", *, test_mode=True) -> Event:
    eid = new_event_id()
    data = {"payment_id": str(uuid.uuid4()), "status": "COMPLETED", "amount": 12.5, "metadata": {"n": "é"}}
    with unit_of_work(sessions) as s:
        event = Event(
            id=eid,
            type=event_type,
            merchant_id=merchant_id,
            test_mode=test_mode,
            payload=EventEnvelope(eid, EventType(event_type), iso(utcnow()), test_mode, data).body(),
            published_at=utcnow(),
        )
        s.add(event)
    return event


def intake(sessions, event: Event) -> list:
    """The new delivery ids (intake fills its list as the transaction commits)."""
    with unit_of_work(sessions) as s:
        created = handle_event(s, Delivered(event.id, event.type, event.payload, 1))
    return created


def publish(settings, topo, *events: Event) -> None:
    pub = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
    try:
        pub.publish_batch(Message(e.id, e.type, e.payload) for e in events)
    finally:
        pub.close()


def delivery(sessions, delivery_id) -> WebhookDelivery:
    with sessions() as s:
        return s.get(WebhookDelivery, delivery_id)


def deliveries_of(sessions, event_id) -> list[WebhookDelivery]:
    with sessions() as s:
        return list(s.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)))


def attempts_of(sessions, delivery_id) -> list[DeliveryAttempt]:
    with sessions() as s:
        return list(
            s.scalars(
                sa.select(DeliveryAttempt)
                .where(DeliveryAttempt.delivery_id == delivery_id)
                .order_by(DeliveryAttempt.attempt)
            )
        )


def settled(sessions, delivery_id, status="SUCCEEDED"):
    return lambda: (d := delivery(sessions, delivery_id)).status == status and d.lease_until is None and d


def count_settled(sessions, ids, status="SUCCEEDED") -> int:
    with sessions() as s:
        return s.scalar(
            sa.select(sa.func.count())
            .select_from(WebhookDelivery)
            .where(WebhookDelivery.id.in_(ids), WebhookDelivery.status == status, WebhookDelivery.lease_until.is_(None))
        )
