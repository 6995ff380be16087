"""A private RabbitMQ topology per test run, deleted afterwards."""
from __future__ import annotations

import secrets
import threading
from contextlib import contextmanager

import pika

from kassa_common.bus import topology


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
        conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
        ch = conn.channel()
        for q in topo.queues:
            for name in (q.name, q.retry, q.dlq):
                ch.queue_delete(name)
        ch.exchange_delete(topo.exchange)
        conn.close()


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
