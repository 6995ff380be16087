"""Every exchange and queue Kassa uses, declared in one place for services and tests.

Each consuming queue ``Q`` is a durable quorum queue with two companions:
``Q.retry`` (messages wait ``RETRY_DELAY_MS`` there, then dead-letter back to ``Q``, the
broker keeping each until ``Q`` has it: at-least-once dead-lettering) and ``Q.dlq``
(messages that failed ``MAX_ATTEMPTS`` times or cannot be handled at all). All three are
quorum queues, replicated over a cluster's nodes, so losing a node loses none of them and
blocks nobody's declare (a classic queue whose node is down refuses even that). A retry
queue an older Kassa declared as classic is replaced by a quorum one once it is empty
(it empties itself into ``Q`` within ``RETRY_DELAY_MS``).

The chain watchers' address feed (``payment.created``) is the one queue per process rather
than per consumer kind: every watcher process keeps the whole watchlist, so each takes every
``payment.created`` from a queue of its own (``Topology.watcher_feed``). Those queues
expire (``x-expires``, with their companions) once unused for
``FEED_EXPIRES_MS``: a stopped process leaves nothing behind. What a new process missed is
in the database, which the watcher reads at start and every reload.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel

from kassa_common.messaging.messages import EventType, RoutingKey

log = logging.getLogger("kassa.bus")
EXCHANGE = "kassa.events"
PRECONDITION_FAILED = 406
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
    kind: dict[str, object] = {"x-queue-type": "quorum"}
    if q.expires_ms is None:
        channel.queue_declare(queue=q.name, durable=True, arguments=kind)
    else:  # a watcher's feed, classic before: what it held is in the database, read at start
        kind["x-expires"] = q.expires_ms
        _declare_replacing(channel, q.name, kind, if_empty=False)
    retry: dict[str, object] = {
        **kind,
        "x-message-ttl": q.retry_delay_ms,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": q.name,
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",  # at-least-once dead-lettering asks for it
    }
    _declare_replacing(channel, q.retry, retry)
    if q.expires_ms is None:
        channel.queue_declare(queue=q.dlq, durable=True, arguments=kind)
    else:
        _declare_replacing(channel, q.dlq, kind)
    for key in q.bindings:
        channel.queue_bind(queue=q.name, exchange=exchange, routing_key=key)


def _declare_replacing(
    channel: BlockingChannel, name: str, arguments: dict[str, object], *, if_empty: bool = True
) -> None:
    """Declare a queue an older Kassa declared as classic, on a channel of its own (the
    broker's refusal of the new arguments closes the channel it happens on): the classic
    queue is deleted (``if_empty``: only once empty) and declared anew. A retry queue still
    holding messages is kept this time: it empties into its work queue within the retry
    delay, and the next declare replaces it."""
    side = channel.connection.channel()
    try:
        side.queue_declare(queue=name, durable=True, arguments=arguments)
        return
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != PRECONDITION_FAILED:
            raise
    finally:
        if side.is_open:
            side.close()
    side = channel.connection.channel()
    try:
        side.queue_delete(queue=name, if_empty=if_empty)
        side.queue_declare(queue=name, durable=True, arguments=arguments)
        log.info("queue %s is a quorum queue now", name)
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != PRECONDITION_FAILED:
            raise
        log.warning("queue %s is a classic queue still holding messages; replaced once empty", name)
    finally:
        if side.is_open:
            side.close()


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
