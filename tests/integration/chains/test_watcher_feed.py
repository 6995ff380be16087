"""The chain watchers' payment feed: ``payment.created`` through a queue of each watcher
process's own (declared by the topology), consumed by the common consumer, into the
process's watchlists. No chain node needed: the feed only fills watchlists."""

from __future__ import annotations

import secrets
import uuid
from contextlib import ExitStack
from dataclasses import replace

import pika
import pika.exceptions
import pytest

from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.publisher import Message
from kassa_common.messaging.relay import relay_pending
from kassa_common.messaging.topology import declare_queue
from kassa_chain_watcher.network_watcher import make_watchlist
from kassa_chain_watcher.watchlist import PaymentFeed
from tests.support.api import LIVE_PAYMENT
from tests.support.bus import bus, consuming, delete_queues, queue_depth  # noqa: F401  (fixture)
from tests.support.wait import until


@pytest.fixture
def processes(settings, sessions, bus):
    """``start()``: a watcher process's feed running (its watchlist of LOCAL_EVM returned)."""
    _, topo, _ = bus
    with ExitStack() as running:
        feeds = []

        def start():
            watchlist = make_watchlist(settings.networks.get("LOCAL_EVM"))
            feed = PaymentFeed({"LOCAL_EVM": watchlist}, evm_networks=["LOCAL_EVM"])

            def make(queue, handler, **options):
                return Consumer(settings.rabbitmq_url, topo, queue, handler, sessions, name="test-feed", **options)

            consumer = running.enter_context(consuming(feed.consumer(make, topo, secrets.token_hex(4))))
            until(consumer.consuming.is_set, message="feed consuming")
            feeds.append(consumer)
            return watchlist, consumer

        yield start
        delete_queues(settings.rabbitmq_url, [c.queue for c in feeds])


def test_every_watcher_process_gets_each_new_live_payment_and_acks_it(
    client, live_merchant, sessions, bus, processes, settings
):
    _, _, publisher = bus
    (first, first_feed), (second, second_feed) = processes(), processes()

    r = client.post("/v1/api/payments", json=LIVE_PAYMENT, headers=live_merchant.headers("live"))
    assert r.status_code == 201
    relay_pending(sessions, publisher)

    address = r.get_json()["data"]["address"].lower()
    until(lambda: address in first and address in second, message="the address in both processes' watchlists")
    for feed in (first_feed, second_feed):
        until(lambda feed=feed: queue_depth(settings.rabbitmq_url, feed.queue.name) == 0, message="feed acked")


def test_a_malformed_payment_created_goes_to_the_feeds_dead_letters(bus, processes, settings):
    _, _, publisher = bus
    watchlist, feed = processes()

    publisher.publish_batch([Message(f"evt_{uuid.uuid4().hex}", "payment.created", {"data": {}})])

    until(lambda: queue_depth(settings.rabbitmq_url, feed.queue.dlq) == 1, message="dead-lettered")
    assert len(watchlist) == 0


def test_a_watcher_process_feed_queue_expires_once_unused(bus, settings):
    """A stopped process leaves no queue behind: the broker deletes its feed, retry queue and
    DLQ once unused (here after 300 ms instead of minutes)."""
    _, topo, _ = bus
    feed = replace(topo.watcher_feed(secrets.token_hex(4)), expires_ms=300)
    conn = pika.BlockingConnection(pika.URLParameters(settings.rabbitmq_url))
    try:
        declare_queue(conn.channel(), topo.exchange, feed)
    finally:
        conn.close()

    def exists(name: str) -> bool:
        conn = pika.BlockingConnection(pika.URLParameters(settings.rabbitmq_url))
        try:
            conn.channel().queue_declare(name, passive=True)
            return True
        except pika.exceptions.ChannelClosedByBroker:
            return False
        finally:
            if conn.is_open:
                conn.close()

    assert exists(feed.name)
    # a passive declare counts as a use and renews the 300 ms lease: look less often than that
    until(
        lambda: not any(exists(n) for n in (feed.name, feed.retry, feed.dlq)),
        interval=1.0,
        message="feed queues expired",
    )
