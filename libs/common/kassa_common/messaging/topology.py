"""Every exchange and queue Kassa uses, declared in one place for services and tests.

Each consuming queue ``Q`` is a durable quorum queue with two companions:
``Q.retry`` (messages wait ``RETRY_DELAY_MS`` there, then dead-letter back to ``Q``) and
``Q.dlq`` (messages that failed ``MAX_ATTEMPTS`` times or cannot be handled at all).

The chain watchers' address feed (``payment.created``) is the one queue per process rather
than per consumer kind: every watcher process keeps the whole watchlist, so each takes every
``payment.created`` from a queue of its own (``Topology.watcher_feed``). Those queues are
classic and expire (``x-expires``, with their companions) once unused for
``FEED_EXPIRES_MS``: a stopped process leaves nothing behind. What a new process missed is
in the database, which the watcher reads at start and every reload.
"""

from __future__ import annotations

from dataclasses import dataclass

from pika.adapters.blocking_connection import BlockingChannel

from kassa_common.messaging.messages import EventType, RoutingKey

EXCHANGE = "kassa.events"
RETRY_DELAY_MS = 5_000
MAX_ATTEMPTS = 5
FEED_EXPIRES_MS = 10 * 60_000


@dataclass(frozen=True)
class QueueSpec:
    name: str
    bindings: tuple[str, ...]
    retry_delay_ms: int = RETRY_DELAY_MS
    expires_ms: int | None = None  # a queue of one process: deleted once unused this long

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
WATCHER_FEED = "chain-watcher.addresses"  # + ".<process>": see Topology.watcher_feed


def declare(channel: BlockingChannel, exchange: str = EXCHANGE, queues: tuple[QueueSpec, ...] = QUEUES) -> None:
    """Idempotently declare the exchange, every queue, its retry queue, DLQ and bindings."""
    channel.exchange_declare(exchange=exchange, exchange_type="topic", durable=True)  # type: ignore[arg-type]  # pika takes a str
    for q in queues:
        declare_queue(channel, exchange, q)


def declare_queue(channel: BlockingChannel, exchange: str, q: QueueSpec) -> None:
    """Idempotently declare ``q``, its retry queue and DLQ, and bind it to ``exchange``
    (declared already). Declaring an expiring queue again restarts its expiry."""
    kind: dict[str, object] = {"x-queue-type": "quorum"} if q.expires_ms is None else {"x-expires": q.expires_ms}
    channel.queue_declare(queue=q.name, durable=True, arguments=kind)
    retry: dict[str, object] = {
        "x-message-ttl": q.retry_delay_ms,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": q.name,
    }
    if q.expires_ms is not None:
        retry["x-expires"] = q.expires_ms
    channel.queue_declare(queue=q.retry, durable=True, arguments=retry)
    channel.queue_declare(queue=q.dlq, durable=True, arguments=kind)
    for key in q.bindings:
        channel.queue_bind(queue=q.name, exchange=exchange, routing_key=key)


@dataclass(frozen=True)
class Topology:
    exchange: str
    settler: QueueSpec
    webhook_intake: QueueSpec
    notifier: QueueSpec
    settler_test: QueueSpec
    prefix: str = ""

    @property
    def queues(self) -> tuple[QueueSpec, ...]:
        return (self.settler, self.webhook_intake, self.notifier, self.settler_test)

    def declare(self, channel: BlockingChannel) -> None:
        declare(channel, self.exchange, self.queues)

    def watcher_feed(self, process: str) -> QueueSpec:
        """The address feed of the watcher process ``process`` (a name no other process uses)."""
        name = f"{self.prefix}.{WATCHER_FEED}.{process}" if self.prefix else f"{WATCHER_FEED}.{process}"
        bindings = (EventType.PAYMENT_CREATED, EventType.REFUND_CLAIMED, EventType.REFUND_REORGED)
        return QueueSpec(name, bindings, self.settler.retry_delay_ms, FEED_EXPIRES_MS)


def named(prefix: str = "", *, retry_delay_ms: int = RETRY_DELAY_MS) -> Topology:
    """The topology, or a private copy of it (own exchange and queues) when ``prefix`` is set;
    a private copy may wait ``retry_delay_ms`` between attempts (tests shorten it)."""
    if not prefix:
        return Topology(EXCHANGE, *QUEUES)
    settler, intake, notifier, test = (QueueSpec(f"{prefix}.{q.name}", q.bindings, retry_delay_ms) for q in QUEUES)
    return Topology(f"{prefix}.{EXCHANGE}", settler, intake, notifier, test, prefix)
