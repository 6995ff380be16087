"""Clients fail over between the nodes ``RABBITMQ_URL`` lists (DESIGN §7).

The first node is a private RabbitMQ the test starts on its own port and data directory
and kills by pid; the second is the machine's broker (a private topology on it). They are
two brokers rather than one cluster (a cluster takes a minute to form: ``make chaos-ha``
covers the cluster, with the node leading the queues killed), which is what a client sees
of a cluster when its node dies: the connection drops and the next node takes it. A
publisher's batch that was never confirmed is published again after the failover, and a
consumer takes every message on the next node, each handled once.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.publisher import Message, Publisher, PublishFailed
from kassa_dev.instances import PrivateRabbit, free_port
from tests.support.bus import consuming, private_topology
from tests.support.wait import until

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("outages")]
KEY = "chain.transfer.confirmed"


@pytest.fixture(scope="module")
def node():
    server = PrivateRabbit().start()
    yield server
    server.remove()


def publish(publisher: Publisher, n: int, timeout: float = 30) -> list[str]:
    """``n`` messages, published the way the outbox relay does: a batch not confirmed is
    published again (the same ids) until the broker confirms it."""
    ids = [f"test_{uuid.uuid4().hex}" for _ in range(n)]
    deadline = time.monotonic() + timeout
    while True:
        try:
            publisher.publish_batch(Message(i, KEY, {"n": k}) for k, i in enumerate(ids))
            return ids
        except PublishFailed:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_publisher_and_consumer_go_to_the_next_node_when_theirs_dies(node, settings, sessions):
    with private_topology(settings.rabbitmq_url) as (_prefix, topo):
        nodes = f"{node.url},{settings.rabbitmq_url}"
        handled: list[str] = []
        lock = threading.Lock()

        def handler(_session, msg):
            with lock:
                handled.append(msg.message_id)

        consumer = Consumer(nodes, topo, topo.settler, handler, sessions, name="test-failover")
        publisher = Publisher(nodes, topo.exchange, declare=topo.declare, name="test-failover")
        try:
            with consuming(consumer):
                assert until(consumer.consuming.is_set, message="consuming")
                before = publish(publisher, 5)
                assert until(lambda: len(handled) >= 5, message="handled on the first node")
                assert consumer._conn is not None and consumer._conn._impl.params.port == node.port

                node.kill()
                after = publish(publisher, 5)  # the first try fails on the dead node
                assert until(lambda: len(handled) >= 10, timeout=60, message="handled on the second node")
                assert publisher._conn is not None and publisher._conn._impl.params.port != node.port
                time.sleep(1)  # anything handled twice would show up by now
                with lock:
                    assert sorted(handled) == sorted(before + after)
        finally:
            publisher.close()


def test_a_node_down_at_start_is_passed_over(settings, sessions):
    with private_topology(settings.rabbitmq_url) as (_prefix, topo):
        nodes = f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F,{settings.rabbitmq_url}"
        handled: list[str] = []
        consumer = Consumer(nodes, topo, topo.settler, lambda _s, m: handled.append(m.message_id), sessions, name="t")
        publisher = Publisher(nodes, topo.exchange, declare=topo.declare)
        try:
            with consuming(consumer):
                ids = publish(publisher, 3)
                assert until(lambda: sorted(handled) == sorted(ids), message="handled")
        finally:
            publisher.close()
