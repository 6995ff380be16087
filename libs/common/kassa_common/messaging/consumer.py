"""A queue consumer that handles messages in database transactions and acks them only
after their transaction commits.

Messages that arrive together (up to ``batch``: whatever the broker has delivered by the
time the consumer looks) are handled in ONE transaction, the handler called for each in
turn: one commit and one ``processed_messages`` insert for the lot instead of one per
message. Nothing waits to fill a batch, so a lone message goes at once; under load the
batches grow by themselves. If a handler fails, the transaction rolls back, that message
alone takes the failure (below: retry or dead letter, exactly the attempts it would have
had on its own) and the rest of the batch is handled again without it; a failure no
message can be blamed for (a deadlock, the commit) sends each message on alone.

The message id is recorded in ``processed_messages`` in the same transaction, so a
redelivered message is a no-op. A failing message is re-published (confirmed) to the
queue's retry queue and acked; after ``MAX_ATTEMPTS``, or when the handler says it can
never succeed (``Reject``), it goes to the dead-letter queue instead. Never auto-ack,
never requeue in a loop.

An outage is not the message's fault (DESIGN §1): when the handler fails with a
connection-level error and the probe (by default ``SELECT 1`` on the database) fails too,
the consumer pauses with the message in hand, backing off with jitter up to 30 s and
keeping the broker connection's heartbeats, until the probe answers; then it handles
the same message again, its attempts untouched, however long the outage lasted. If the
probe answers at once, the failure counts as the message's own.

``on_committed(result)`` runs after the commit for each message whose handler returned
something (the webhook sender hands new deliveries to its dispatcher); ``after_commit()``
runs once per committed batch (the settler wakes the outbox relay: the events it just
wrote leave at once instead of at the relay's next poll). ``prepare(session, messages)``
runs first in each batch's transaction, with the messages not handled before (the settler
locks all the payments they pay in one round trip). A handler that finds something missing
that must be fetched over the network (the settler: a rate its cache lacks) raises
``errors.Unprepared``: the batch is rolled back, ``prepare()`` fetches it with no
transaction open (no row stays locked across a network call) and the batch runs again, its
attempts unspent.

The queue is declared on each connect: the topology's, and ``queue`` itself when it is not
one of them (a chain watcher's feed, its process's own). ``consuming`` is set while the
consumer takes messages.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions
import sqlalchemy as sa
from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import Basic, BasicProperties
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.db import unit_of_work
from kassa_common.errors import Unprepared
from kassa_common.messaging import topology
from kassa_common.messaging.publisher import Nodes, republished

log = logging.getLogger("kassa.bus")
PREPARE_ROUNDS = 3  # fetches outside the transaction (``Unprepared``) before a batch's failure counts
ATTEMPT_HEADER = "x-kassa-attempt"


class Reject(Exception):
    """The message can never be handled: dead-letter it at once."""


class _Stopping(Exception):
    """Told to stop while waiting out an outage: the message goes back to its queue."""


class _HandlerFailed(Exception):
    """The handler failed on message ``index`` of a batch (the error is the ``__cause__``)."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _unattributable(exc: BaseException) -> bool:
    """A deadlock or serialization failure: the batch's doing, not the message's."""
    return getattr(getattr(exc, "orig", None), "pgcode", None) in ("40P01", "40001")


@dataclass(frozen=True)
class Delivered:
    message_id: str
    routing_key: str
    body: dict[str, Any]
    attempt: int


Handler = Callable[[Session, Delivered], Any]
# One statement whatever the batch's size (compiled once): the ids not recorded before come back.
RECORD_PROCESSED = sa.text("""
    INSERT INTO processed_messages (consumer, message_id)
    SELECT :consumer, unnest(CAST(:ids AS text[]))
    ON CONFLICT DO NOTHING
    RETURNING message_id
""")


def database_probe(sessions: sessionmaker[Session]) -> Callable[[], None]:
    """A probe that raises unless the database answers ``SELECT 1``."""

    def probe() -> None:
        with sessions() as session:
            session.execute(sa.text("SELECT 1"))

    return probe


class Consumer:
    def __init__(
        self,
        url: str,
        topo: topology.Topology,
        queue: topology.QueueSpec,
        handler: Handler,
        sessions: sessionmaker[Session],
        *,
        name: str,
        prefetch: int = 100,
        batch: int = 50,
        on_committed: Callable[[Any], None] | None = None,
        after_commit: Callable[[], None] | None = None,
        prepare: Callable[[Session, list[Delivered]], None] | None = None,
        probe: Callable[[], None] | None = None,
    ) -> None:
        self.url, self.topo, self.queue, self.handler, self.sessions = url, topo, queue, handler, sessions
        self.name, self.prefetch, self.batch = name, prefetch, max(1, batch)
        self.on_committed, self.after_commit, self.prepare = on_committed, after_commit, prepare
        self.probe = probe or database_probe(sessions)  # raises while the infrastructure is down
        self.paused = threading.Event()  # set while waiting out an outage
        self.consuming = threading.Event()  # set while subscribed to the queue
        self._stopping = threading.Event()
        self.nodes = Nodes(url, name)
        self._conn: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._buffer: list[_Incoming] = []
        self.handled = 0

    # -- lifecycle ----------------------------------------------------------------------
    def run(self) -> None:
        """Consume until ``stop()``; reconnect with backoff when the broker goes away."""
        backoff = transient.Backoff()
        while not self._stopping.is_set():
            try:
                self._consume()
                backoff.reset()
            except (pika.exceptions.AMQPError, OSError) as exc:
                if self._stopping.is_set():
                    break
                delay = backoff.next()
                log.warning("consumer %s lost the broker (%r); reconnecting in %.1fs", self.name, exc, delay)
                self._stopping.wait(delay)
            finally:
                self.consuming.clear()
                self._buffer = []  # unacked: the broker redelivers them
                self._close()

    def stop(self) -> None:
        """Stop taking messages; the ones in hand finish, commit and are acked first."""
        self._stopping.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.add_callback_threadsafe(lambda: None)  # wakes the loop waiting for deliveries
            except Exception:  # noqa: BLE001, S110 - connection already gone
                pass

    @property
    def _live(self) -> BlockingChannel:
        """The channel being consumed (set while ``_consume`` runs)."""
        assert self._channel is not None
        return self._channel

    def _consume(self) -> None:
        conn = self._conn = self.nodes.connect()
        channel = self._channel = conn.channel()
        self.topo.declare(channel)
        if self.queue not in self.topo.queues:
            topology.declare_queue(channel, self.topo.exchange, self.queue)
        channel.confirm_delivery()  # re-publishes to retry/dlq are confirmed before the ack
        channel.basic_qos(prefetch_count=max(self.prefetch, self.batch))
        channel.basic_consume(self.queue.name, self._on_message, auto_ack=False)
        self.consuming.set()
        log.info("consumer %s consuming %s", self.name, self.queue.name)
        while not self._stopping.is_set():
            # Dispatches every delivery that has arrived (``_on_message`` only collects them),
            # waiting up to a second for the first; then the lot is handled as one batch.
            conn.process_data_events(time_limit=1.0)  # type: ignore[arg-type]  # a float: pika's stubs say int
            while self._buffer:
                batch, self._buffer = self._buffer[: self.batch], self._buffer[self.batch :]
                self._handle_batch(batch)

    def _close(self) -> None:
        things: tuple[BlockingChannel | None, pika.BlockingConnection | None] = (self._channel, self._conn)
        for thing in things:
            try:
                if thing is not None and thing.is_open:
                    thing.close()
            except Exception:  # noqa: BLE001, S110 - closing what broke
                pass
        self._channel = self._conn = None

    # -- messages -----------------------------------------------------------------------
    def _on_message(self, channel: BlockingChannel, method: Basic.Deliver, props: BasicProperties, body: bytes) -> None:
        assert method.delivery_tag is not None and method.routing_key is not None  # a delivery has both
        self._buffer.append(_Incoming(method.delivery_tag, method.routing_key, props, body))

    def _handle_batch(self, batch: list[_Incoming]) -> None:
        """Handle ``batch`` in one transaction and ack it.

        A message whose handler fails is failed alone (retry or DLQ: the failure is its
        attempt) and the rest of the batch is handled again without it; a failure no
        message can be blamed for (a deadlock, the commit) sends each message on alone.
        """
        pending: list[tuple[_Incoming, Delivered]] = []
        for incoming in batch:
            try:
                pending.append((incoming, incoming.decode()))
            except Reject as exc:
                self._fail(incoming, exc)
        while len(pending) > 1:
            try:
                results = self._through_outages(lambda: self.handle_many([m for _, m in pending]), pending[0][1])
            except _Stopping:
                for incoming, _ in pending:
                    self._live.basic_nack(incoming.tag, requeue=True)  # untouched: back to the queue
                return
            except _HandlerFailed as failed:
                incoming, _ = pending.pop(failed.index)
                self._fail(incoming, failed.__cause__)
            except Exception as exc:  # noqa: BLE001 - nobody to blame: each message alone
                log.info("consumer %s: a batch of %d failed (%r); handling each alone", self.name, len(pending), exc)
                break
            else:
                self._committed(pending, results)
                return
        for incoming, msg in pending:
            self._handle_alone(incoming, msg)

    def _handle_alone(self, incoming: _Incoming, msg: Delivered) -> None:
        try:
            result = self._through_outages(lambda: self.handle(msg), msg)
        except _Stopping:
            self._live.basic_nack(incoming.tag, requeue=True)  # untouched: back to the queue
        except Exception as exc:  # noqa: BLE001 - retry, bounded, or dead-letter
            self._fail(incoming, exc)
        else:
            self._committed([(incoming, msg)], [result])

    def _committed(self, done: list[tuple[_Incoming, Delivered]], results: list[Any]) -> None:
        # One ack for the lot: every delivery before these was settled already (batches are
        # contiguous slices of what arrived, handled in order; a failed one is acked by _fail).
        self._live.basic_ack(max(incoming.tag for incoming, _ in done), multiple=True)
        self.handled += len(done)
        if self.after_commit is not None:
            self.after_commit()
        if self.on_committed is not None:
            for result in results:
                if result is not None:
                    self.on_committed(result)

    def _fail(self, incoming: _Incoming, exc: BaseException | None) -> None:
        """To the retry queue (bounded) or, for a ``Reject`` or the last attempt, the DLQ."""
        props = incoming.props
        if isinstance(exc, Reject):
            log.error("dead-lettering %s: %s", props.message_id, exc)
            target, attempt = self.queue.dlq, incoming.attempt
        else:
            target = self.queue.retry if incoming.attempt < topology.MAX_ATTEMPTS else self.queue.dlq
            attempt = incoming.attempt + 1
            log.warning("message %s failed (attempt %d), to %s: %r", props.message_id, incoming.attempt, target, exc)
        if self.queue.expires_ms is not None:  # its companions may have expired, unused
            topology.declare_queue(self._live, self.topo.exchange, self.queue)
        self._republish(
            self._live, target, props, incoming.body, attempt, str(exc) if isinstance(exc, Reject) else repr(exc)
        )
        self._live.basic_ack(incoming.tag)

    def _through_outages(self, work: Callable[[], Any], msg: Delivered) -> Any:
        """``work()``, again and again while the infrastructure is down (attempts unspent)."""
        while True:
            try:
                return work()
            except Reject:
                raise
            except Exception as exc:
                if not transient.is_transient(exc) or self._infrastructure_up():
                    raise
                self._wait_out_outage(msg, exc)

    def _infrastructure_up(self) -> bool:
        try:
            self.probe()
            return True
        except Exception:  # noqa: BLE001 - any failure of the probe means "not yet"
            return False

    def _wait_out_outage(self, msg: Delivered, exc: Exception) -> None:
        """Back off until the probe answers; heartbeats keep the broker connection alive."""
        backoff = transient.Backoff()
        self.paused.set()
        log.warning(
            "consumer %s paused: infrastructure unreachable (%r); message %s waits with its attempts intact",
            self.name,
            exc,
            msg.message_id,
        )
        started = time.monotonic()
        try:
            while True:
                delay = backoff.next()
                end = time.monotonic() + delay
                while time.monotonic() < end:
                    if self._stopping.is_set():
                        raise _Stopping()
                    assert self._conn is not None  # consuming
                    self._conn.sleep(min(0.5, max(end - time.monotonic(), 0)))
                if self._infrastructure_up():
                    break
        finally:
            self.paused.clear()
        log.info("consumer %s resumed after %.1fs", self.name, time.monotonic() - started)

    def handle(self, msg: Delivered) -> Any:
        """Run the handler once per message id, in one transaction."""
        return self.handle_many([msg])[0]

    def handle_many(self, msgs: list[Delivered]) -> list[Any]:
        """Run the handler for each message not handled before, all in one transaction; the
        handlers' results in order (None for a message already handled). A handler that needs
        something fetched first (``Unprepared``) has the transaction rolled back, the fetch done
        with no transaction open, and the batch run again (at most ``PREPARE_ROUNDS`` times)."""
        for _ in range(PREPARE_ROUNDS):
            try:
                return self._handle_many_once(msgs)
            except Unprepared as exc:
                log.info("consumer %s: %s; fetching it outside the transaction, then again", self.name, exc)
                exc.prepare()
        return self._handle_many_once(msgs)  # still missing: a failure like any other

    def _handle_many_once(self, msgs: list[Delivered]) -> list[Any]:
        with unit_of_work(self.sessions) as session:
            fresh = set(
                session.scalars(RECORD_PROCESSED, {"consumer": self.queue.name, "ids": [m.message_id for m in msgs]})
            )
            if self.prepare is not None and fresh:
                self.prepare(session, [m for m in msgs if m.message_id in fresh])
            results: list[Any] = []
            for index, m in enumerate(msgs):
                if m.message_id not in fresh:
                    results.append(None)  # a redelivery of a message already handled
                    continue
                fresh.discard(m.message_id)  # the same message twice in one batch: once
                try:
                    results.append(self.handler(session, m))
                except Unprepared:
                    raise  # nobody's failure: fetched, then the whole batch again
                except Exception as exc:
                    if len(msgs) == 1 or _unattributable(exc):
                        raise
                    raise _HandlerFailed(index) from exc
            return results

    def _republish(
        self, channel: BlockingChannel, queue: str, props: BasicProperties, body: bytes, attempt: int, error: str
    ) -> None:
        headers = dict(props.headers or {})
        headers[ATTEMPT_HEADER] = attempt
        headers["x-kassa-error"] = error[:500]
        new_props = republished(props, headers, int(time.time()))
        # mandatory: a queue missing (being replaced, see topology) fails the publish, and the
        # message, unacked, comes back, instead of the broker confirming a message it dropped
        channel.basic_publish("", queue, body, new_props, mandatory=True)


@dataclass(frozen=True)
class _Incoming:
    """A delivery as the broker handed it, before decoding."""

    tag: int
    routing_key: str
    props: BasicProperties
    body: bytes

    @property
    def attempt(self) -> int:
        return int((self.props.headers or {}).get(ATTEMPT_HEADER, 1))

    def decode(self) -> Delivered:
        try:
            payload = json.loads(self.body)
        except ValueError as exc:
            raise Reject(f"message is not JSON: {exc}") from None
        if not isinstance(payload, dict) or not self.props.message_id:
            raise Reject("message is not a JSON object with a message id")
        # A retried or redriven message arrives through its queue's name: the routing key it
        # was published with travels in ``type`` (the publisher sets it, re-publishes keep it).
        return Delivered(self.props.message_id, self.props.type or self.routing_key, payload, self.attempt)
