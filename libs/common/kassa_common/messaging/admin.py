"""What an operator asks of the bus: how deep each queue is, who consumes it, and moving a
dead-letter queue's messages back to the queue they came from.

Depths come from passive declares (no management plugin needed). ``redrive`` takes one
message at a time from the DLQ, publishes it to the work queue with confirms (attempt
count reset, the last error kept for the record), and acks it in the DLQ only once the
broker has confirmed the copy: a crash in between leaves a duplicate, never a loss, and
the consumers' message-id log makes a duplicate a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass

import pika
import pika.exceptions

from kassa_common.messaging import topology
from kassa_common.messaging.consumer import ATTEMPT_HEADER
from kassa_common.messaging.publisher import connection_parameters, republished


@dataclass(frozen=True)
class QueueDepth:
    name: str
    role: str  # "work", "retry" or "dlq"
    messages: int
    consumers: int


def _connect(url: str, name: str) -> pika.BlockingConnection:
    every = connection_parameters(url, name)
    for params in every:
        params.socket_timeout = 3
        params.stack_timeout = 5
    return pika.BlockingConnection(every)


def queue_depths(url: str, topo: topology.Topology) -> list[QueueDepth]:
    """Every queue of the topology with its depth and consumer count (0 for a queue not
    declared yet: nothing ever consumed it). Looks only; declares nothing."""
    conn = _connect(url, "kassa-bus-status")
    try:
        channel = conn.channel()
        out: list[QueueDepth] = []
        for q in topo.queues:
            for name, role in ((q.name, "work"), (q.retry, "retry"), (q.dlq, "dlq")):
                try:
                    ok = channel.queue_declare(name, passive=True).method
                    out.append(QueueDepth(name, role, ok.message_count or 0, ok.consumer_count or 0))
                except pika.exceptions.ChannelClosedByBroker as exc:
                    if exc.reply_code != 404:
                        raise
                    out.append(QueueDepth(name, role, 0, 0))
                    channel = conn.channel()
        return out
    finally:
        if conn.is_open:
            conn.close()


def dead_letters(url: str, topo: topology.Topology) -> dict[str, int]:
    """DLQ name → depth, for every consuming queue."""
    return {d.name: d.messages for d in queue_depths(url, topo) if d.role == "dlq"}


def find_queue(topo: topology.Topology, name: str) -> topology.QueueSpec:
    """The queue whose DLQ (or which itself) is called ``name``."""
    for q in topo.queues:
        if name in (q.name, q.dlq):
            return q
    known = ", ".join(q.dlq for q in topo.queues)
    raise ValueError(f"no dead-letter queue {name!r}; the DLQs are {known}")


def redrive(url: str, topo: topology.Topology, name: str, *, limit: int | None = None) -> int:
    """Move the messages of ``name``'s DLQ back to its work queue; how many were moved.

    Only the messages present when it starts are moved (a message that fails again and
    comes back meanwhile is not looped on)."""
    q = find_queue(topo, name)
    conn = _connect(url, "kassa-bus-redrive")
    moved = 0
    try:
        channel = conn.channel()
        channel.confirm_delivery()
        waiting = channel.queue_declare(q.dlq, passive=True).method.message_count or 0
        todo = waiting if limit is None else min(waiting, limit)
        while moved < todo:
            method, props, body = channel.basic_get(q.dlq, auto_ack=False)
            if method is None:
                break
            assert props is not None and body is not None and method.delivery_tag is not None  # a message
            headers = dict(props.headers or {})
            headers.pop(ATTEMPT_HEADER, None)  # a fresh set of attempts
            if "x-kassa-error" in headers:
                headers["x-kassa-last-dead-letter-error"] = headers.pop("x-kassa-error")
            headers.pop("x-death", None)
            copy = republished(props, headers, props.timestamp)
            channel.basic_publish("", q.name, body, copy, mandatory=True)  # confirmed before returning
            channel.basic_ack(method.delivery_tag)
            moved += 1
        return moved
    finally:
        if conn.is_open:
            conn.close()
