"""Every exchange and queue Kassa uses, declared in one place for services and tests.

Each consuming queue ``Q`` is a durable quorum queue with two companions:
``Q.retry`` (messages wait ``RETRY_DELAY_MS`` there, then dead-letter back to ``Q``) and
``Q.dlq`` (messages that failed ``MAX_ATTEMPTS`` times or cannot be handled at all).
"""

from __future__ import annotations

from dataclasses import dataclass

from pika.adapters.blocking_connection import BlockingChannel

from kassa_common.messaging.messages import EventType, RoutingKey

EXCHANGE = "kassa.events"
RETRY_DELAY_MS = 5_000
MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class QueueSpec:
    name: str
    bindings: tuple[str, ...]
    retry_delay_ms: int = RETRY_DELAY_MS

    @property
    def retry(self) -> str:
        return f"{self.name}.retry"

    @property
    def dlq(self) -> str:
        return f"{self.name}.dlq"


SETTLER = QueueSpec("settler.transfers", (RoutingKey.ALL_TRANSFERS, RoutingKey.CHAIN_WATERMARK))
# test mode's simulated transfers: a tester's burst never queues ahead of the chain's reports
SETTLER_TEST = QueueSpec("settler.test-transfers", (RoutingKey.ALL_TEST_TRANSFERS,))
WEBHOOK_INTAKE = QueueSpec("webhook-sender.events", (RoutingKey.ALL_PAYMENT_EVENTS, RoutingKey.ALL_REFUND_EVENTS))
# the notifier: only the events it emails about
NOTIFIER = QueueSpec(
    "notifier.events",
    (
        EventType.PAYMENT_COMPLETED,
        EventType.PAYMENT_PARTIALLY_PAID,
        EventType.PAYMENT_LATE_PAYMENT,
        EventType.REFUND_CREATED,
        EventType.REFUND_CLAIMED,
    ),
)
QUEUES = (SETTLER, WEBHOOK_INTAKE, NOTIFIER, SETTLER_TEST)  # in Topology's field order


def declare(channel: BlockingChannel, exchange: str = EXCHANGE, queues: tuple[QueueSpec, ...] = QUEUES) -> None:
    """Idempotently declare the exchange, every queue, its retry queue, DLQ and bindings."""
    channel.exchange_declare(exchange=exchange, exchange_type="topic", durable=True)  # type: ignore[arg-type]  # pika takes a str
    for q in queues:
        channel.queue_declare(queue=q.name, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_declare(
            queue=q.retry,
            durable=True,
            arguments={
                "x-message-ttl": q.retry_delay_ms,
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": q.name,
            },
        )
        channel.queue_declare(queue=q.dlq, durable=True, arguments={"x-queue-type": "quorum"})
        for key in q.bindings:
            channel.queue_bind(queue=q.name, exchange=exchange, routing_key=key)


@dataclass(frozen=True)
class Topology:
    exchange: str
    settler: QueueSpec
    webhook_intake: QueueSpec
    notifier: QueueSpec
    settler_test: QueueSpec

    @property
    def queues(self) -> tuple[QueueSpec, ...]:
        return (self.settler, self.webhook_intake, self.notifier, self.settler_test)

    def declare(self, channel: BlockingChannel) -> None:
        declare(channel, self.exchange, self.queues)


def named(prefix: str = "", *, retry_delay_ms: int = RETRY_DELAY_MS) -> Topology:
    """The topology, or a private copy of it (own exchange and queues) when ``prefix`` is set;
    a private copy may wait ``retry_delay_ms`` between attempts (tests shorten it)."""
    if not prefix:
        return Topology(EXCHANGE, *QUEUES)
    return Topology(
        f"{prefix}.{EXCHANGE}", *(QueueSpec(f"{prefix}.{q.name}", q.bindings, retry_delay_ms) for q in QUEUES)
    )
