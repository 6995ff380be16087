"""A private RabbitMQ topology per test run, deleted afterwards.

The fixture ``bus`` is imported by the test modules that use it::

    from tests.support.bus import bus  # noqa: F401  (fixture)
"""

from __future__ import annotations

import secrets
import threading
import uuid
from contextlib import ExitStack, contextmanager

import pika
import pytest

from kassa_common.messaging import topology
from kassa_common.messaging.publisher import Message, Publisher


@contextmanager
def private_topology(rabbitmq_url: str, *, retry_delay_ms: int = topology.RETRY_DELAY_MS):
    prefix = "test" + secrets.token_hex(4)
    topo = topology.named(prefix, retry_delay_ms=retry_delay_ms)
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    topo.declare(conn.channel())
    conn.close()
    try:
        yield prefix, topo
    finally:
        delete_queues(rabbitmq_url, topo.queues, exchange=topo.exchange)


@pytest.fixture
def bus(settings):
    """A private topology and a publisher on its exchange: ``(prefix, topo, publisher)``."""
    with private_topology(settings.rabbitmq_url) as (prefix, topo):
        publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
        yield prefix, topo, publisher
        publisher.close()


def delete_queues(rabbitmq_url: str, queues, *, exchange: str | None = None) -> None:
    """Delete each of ``queues`` (QueueSpecs) with its retry queue and DLQ, then ``exchange``."""
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    ch = conn.channel()
    for q in queues:
        for name in (q.name, q.retry, q.dlq):
            ch.queue_delete(name)
    if exchange is not None:
        ch.exchange_delete(exchange)
    conn.close()


def publish_numbered(rabbitmq_url: str, topo, n: int, key: str = "chain.transfer.confirmed") -> list[str]:
    """Publish ``n`` messages ``{"n": 0…n-1}`` with routing key ``key``; their message ids."""
    ids = [f"test_{uuid.uuid4().hex}" for _ in range(n)]
    publisher = Publisher(rabbitmq_url, topo.exchange)
    publisher.publish_batch(Message(i, key, {"n": k}) for k, i in enumerate(ids))
    publisher.close()
    return ids


def queue_depth(rabbitmq_url: str, queue: str) -> int:
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        return conn.channel().queue_declare(queue, passive=True).method.message_count
    finally:
        conn.close()


@contextmanager
def consuming(consumer):
    """``consumer`` running in a thread for the block; stopped and joined after it."""
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    try:
        yield consumer
    finally:
        consumer.stop()
        thread.join(10)


@contextmanager
def running_settler(settings, topo, sessions, **hooks):
    """The settler's consumers as its process builds them (the chain's reports, test mode's)
    in threads for the block; yields them, the chain's first."""
    from kassa_common.messaging.consumer import Consumer
    from kassa_settler.main import settler_consumers

    def make(queue, handler, **options):
        return Consumer(settings.rabbitmq_url, topo, queue, handler, sessions, name="test-settler", **options)

    with ExitStack() as running:
        yield [running.enter_context(consuming(c)) for c in settler_consumers(make, topo, 1, **hooks)]
