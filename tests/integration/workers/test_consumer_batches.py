"""Messages that arrive together are handled in one transaction, and a message that fails
inside such a batch costs the others nothing: they commit once, it alone is retried or
dead-lettered, with exactly the attempts it would have had on its own."""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from kassa_common.messaging.consumer import Consumer, Reject
from kassa_common.messaging.topology import MAX_ATTEMPTS
from kassa_common.models import ProcessedMessage
from tests.support.bus import private_topology, publish_numbered, queue_depth
from tests.support.wait import until

pytestmark = pytest.mark.integration


class Recorder:
    """Counts the calls per message id; raises for the messages it is told to (the first
    ``fail_times`` calls); returns the message id (handed to ``on_committed``)."""

    def __init__(self, fail: dict[str, Exception] | None = None, fail_times: int = 10**9) -> None:
        self.fail, self.fail_times = fail or {}, fail_times
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, session, msg):
        with self.lock:
            n = self.calls[msg.message_id] = self.calls.get(msg.message_id, 0) + 1
        if msg.message_id in self.fail and n <= self.fail_times:
            raise self.fail[msg.message_id]
        return msg.message_id


@pytest.fixture
def bus(base_env):
    with private_topology(base_env["RABBITMQ_URL"], retry_delay_ms=100) as (_prefix, topo):
        yield topo


@pytest.fixture
def run_consumer(bus, base_env, sessions):
    running = []

    def start(handler, **options) -> tuple[Consumer, list[str]]:
        committed: list[str] = []
        consumer = Consumer(
            base_env["RABBITMQ_URL"],
            bus,
            bus.settler,
            handler,
            sessions,
            name="kassa-test-batches",
            on_committed=committed.append,
            **options,
        )
        thread = threading.Thread(target=consumer.run, daemon=True)
        thread.start()
        running.append((consumer, thread))
        return consumer, committed

    yield start
    for consumer, thread in running:
        consumer.stop()
        thread.join(30)


def transactions_of(sessions, queue: str, ids: list[str]) -> int:
    """How many transactions recorded these message ids (xmin of their processed rows)."""
    with sessions() as s:
        return s.scalar(
            sa.select(sa.func.count(sa.distinct(sa.text("xmin::text"))))
            .select_from(ProcessedMessage)
            .where(ProcessedMessage.consumer == queue, ProcessedMessage.message_id.in_(ids))
        )


def test_messages_waiting_together_are_handled_in_far_fewer_transactions(bus, base_env, sessions, run_consumer):
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 60)  # all waiting before the consumer starts
    handler = Recorder()
    _consumer, committed = run_consumer(handler)
    until(lambda: len(committed) == 60, timeout=20, message="60 messages committed")
    assert sorted(committed) == sorted(ids)
    assert all(handler.calls[i] == 1 for i in ids)
    assert transactions_of(sessions, bus.settler.name, ids) <= 6  # batches of up to 50, not 60 commits
    assert queue_depth(base_env["RABBITMQ_URL"], bus.settler.name) == 0


def test_a_batch_never_exceeds_its_size(bus, base_env, sessions, run_consumer):
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 30)
    _consumer, committed = run_consumer(Recorder(), batch=4)
    until(lambda: len(committed) == 30, timeout=20, message="30 messages committed")
    assert transactions_of(sessions, bus.settler.name, ids) >= 8  # ceil(30 / 4)


def test_a_message_failing_in_a_batch_is_retried_alone_and_the_others_commit_once(bus, base_env, run_consumer):
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 20)
    bad = ids[7]
    handler = Recorder(fail={bad: RuntimeError("fails by itself")}, fail_times=1)
    _consumer, committed = run_consumer(handler)
    until(lambda: len(committed) == 20, timeout=20, message="all 20, the failed one after its retry")
    assert sorted(committed) == sorted(ids)
    assert handler.calls[bad] == 2  # its failed attempt, then the retry: no hidden extra call
    assert queue_depth(base_env["RABBITMQ_URL"], bus.settler.dlq) == 0


def test_a_message_failing_every_attempt_in_batches_reaches_the_dlq_after_exactly_its_attempts(
    bus, base_env, run_consumer
):
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 10)
    bad = ids[0]
    handler = Recorder(fail={bad: RuntimeError("always")})
    _consumer, committed = run_consumer(handler)
    until(
        lambda: queue_depth(base_env["RABBITMQ_URL"], bus.settler.dlq) == 1,
        timeout=30,
        message="the failing message in the DLQ",
    )
    until(lambda: len(committed) == 9, timeout=10, message="the other 9 committed")
    assert bad not in committed
    assert handler.calls[bad] == MAX_ATTEMPTS


def test_a_rejected_message_in_a_batch_is_dead_lettered_at_once_and_the_rest_commit(bus, base_env, run_consumer):
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 12)
    poison = ids[5]
    handler = Recorder(fail={poison: Reject("cannot ever be handled")})
    _consumer, committed = run_consumer(handler)
    until(lambda: len(committed) == 11, timeout=20, message="the 11 good messages committed")
    until(
        lambda: queue_depth(base_env["RABBITMQ_URL"], bus.settler.dlq) == 1,
        timeout=10,
        message="the poison message in the DLQ",
    )
    assert handler.calls[poison] == 1


def test_undecodable_messages_are_dead_lettered_and_do_not_stop_the_batch(bus, base_env, run_consumer):
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(base_env["RABBITMQ_URL"]))
    channel = conn.channel()
    channel.basic_publish(
        bus.exchange,
        "chain.transfer.confirmed",
        b"{not json",
        pika.BasicProperties(message_id="junk-" + uuid.uuid4().hex, delivery_mode=2),
    )
    conn.close()
    ids = publish_numbered(base_env["RABBITMQ_URL"], bus, 5)
    _consumer, committed = run_consumer(Recorder())
    until(lambda: len(committed) == 5, timeout=20, message="the 5 good messages committed")
    until(
        lambda: queue_depth(base_env["RABBITMQ_URL"], bus.settler.dlq) == 1,
        timeout=10,
        message="the undecodable message in the DLQ",
    )
    assert sorted(committed) == sorted(ids)
