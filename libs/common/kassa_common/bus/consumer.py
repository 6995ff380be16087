"""A queue consumer that handles each message in one database transaction and acks it
only after that transaction commits.

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
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import pika
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.bus import topology
from kassa_common.bus.publisher import connection_parameters
from kassa_common.db import unit_of_work
from kassa_common.models import ProcessedMessage

log = logging.getLogger("kassa.bus")
ATTEMPT_HEADER = "x-kassa-attempt"


class Reject(Exception):
    """The message can never be handled: dead-letter it at once."""


class _Stopping(Exception):
    """Told to stop while waiting out an outage: the message goes back to its queue."""


@dataclass(frozen=True)
class Delivered:
    message_id: str
    routing_key: str
    body: dict[str, Any]
    attempt: int


Handler = Callable[[Session, Delivered], Any]


def database_probe(sessions: sessionmaker[Session]) -> Callable[[], None]:
    """A probe that raises unless the database answers ``SELECT 1``."""
    def probe() -> None:
        with sessions() as session:
            session.execute(sa.text("SELECT 1"))
    return probe


class Consumer:
    def __init__(self, url: str, topo: topology.Topology, queue: topology.QueueSpec, handler: Handler,
                 sessions: sessionmaker[Session], *, name: str, prefetch: int = 50,
                 on_committed: Callable[[Any], None] | None = None,
                 probe: Callable[[], None] | None = None) -> None:
        self.url, self.topo, self.queue, self.handler, self.sessions = url, topo, queue, handler, sessions
        self.name, self.prefetch = name, prefetch
        self.on_committed = on_committed
        self.probe = probe or database_probe(sessions)  # raises while the infrastructure is down
        self.paused = threading.Event()  # set while waiting out an outage
        self._stopping = threading.Event()
        self._conn: pika.BlockingConnection | None = None
        self._channel = None
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
                self._close()

    def stop(self) -> None:
        """Stop taking messages; the one in hand finishes, commits and is acked first."""
        self._stopping.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.add_callback_threadsafe(self._stop_consuming)
            except Exception:  # noqa: BLE001 - connection already gone
                pass

    def _stop_consuming(self) -> None:
        if self._channel is not None and self._channel.is_open:
            self._channel.stop_consuming()

    def _consume(self) -> None:
        self._conn = pika.BlockingConnection(connection_parameters(self.url, self.name))
        self._channel = self._conn.channel()
        self.topo.declare(self._channel)
        self._channel.confirm_delivery()  # re-publishes to retry/dlq are confirmed before the ack
        self._channel.basic_qos(prefetch_count=self.prefetch)
        self._channel.basic_consume(self.queue.name, self._on_message, auto_ack=False)
        log.info("consumer %s consuming %s", self.name, self.queue.name)
        if self._stopping.is_set():
            return
        self._channel.start_consuming()

    def _close(self) -> None:
        for thing in (self._channel, self._conn):
            try:
                if thing is not None and thing.is_open:
                    thing.close()
            except Exception:  # noqa: BLE001
                pass
        self._channel = self._conn = None

    # -- one message --------------------------------------------------------------------
    def _on_message(self, channel, method, props, body: bytes) -> None:
        headers = props.headers or {}
        attempt = int(headers.get(ATTEMPT_HEADER, 1))
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict) or not props.message_id:
                raise Reject("message is not a JSON object with a message id")
            # A retried or redriven message arrives through its queue's name: the routing key it
            # was published with travels in ``type`` (the publisher sets it, re-publishes keep it).
            msg = Delivered(props.message_id, props.type or method.routing_key, payload, attempt)
            result = self._handle_through_outages(msg)
        except _Stopping:
            channel.basic_nack(method.delivery_tag, requeue=True)  # untouched: back to the queue
            return
        except Reject as exc:
            log.error("dead-lettering %s: %s", props.message_id, exc)
            self._republish(channel, self.queue.dlq, props, body, attempt, str(exc))
        except Exception as exc:  # noqa: BLE001 - retry anything else, bounded
            target = self.queue.retry if attempt < topology.MAX_ATTEMPTS else self.queue.dlq
            log.warning("message %s failed (attempt %d), to %s: %r", props.message_id, attempt, target, exc)
            self._republish(channel, target, props, body, attempt + 1, repr(exc))
        else:
            channel.basic_ack(method.delivery_tag)
            self.handled += 1
            if self.on_committed is not None and result is not None:
                self.on_committed(result)
            return
        channel.basic_ack(method.delivery_tag)

    def _handle_through_outages(self, msg: Delivered) -> Any:
        """``handle``, again and again while the infrastructure is down (attempts unspent)."""
        while True:
            try:
                return self.handle(msg)
            except Reject:
                raise
            except Exception as exc:  # noqa: BLE001 - the caller decides what a failure costs
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
        log.warning("consumer %s paused: infrastructure unreachable (%r); message %s waits with its attempts intact",
                    self.name, exc, msg.message_id)
        started = time.monotonic()
        try:
            while True:
                delay = backoff.next()
                end = time.monotonic() + delay
                while time.monotonic() < end:
                    if self._stopping.is_set():
                        raise _Stopping()
                    self._conn.sleep(min(0.5, max(end - time.monotonic(), 0)))
                if self._infrastructure_up():
                    break
        finally:
            self.paused.clear()
        log.info("consumer %s resumed after %.1fs", self.name, time.monotonic() - started)

    def handle(self, msg: Delivered) -> Any:
        """Run the handler once per message id, in one transaction."""
        with unit_of_work(self.sessions) as session:
            fresh = session.execute(
                pg_insert(ProcessedMessage).values(consumer=self.queue.name, message_id=msg.message_id)
                .on_conflict_do_nothing().returning(ProcessedMessage.message_id)
            ).first()
            if fresh is None:
                return None  # a redelivery of a message already handled
            return self.handler(session, msg)

    def _republish(self, channel, queue: str, props, body: bytes, attempt: int, error: str) -> None:
        headers = dict(props.headers or {})
        headers[ATTEMPT_HEADER] = attempt
        headers["x-kassa-error"] = error[:500]
        new_props = pika.BasicProperties(content_type=props.content_type, delivery_mode=2,
                                         message_id=props.message_id, type=props.type, headers=headers,
                                         timestamp=int(time.time()))
        channel.basic_publish("", queue, body, new_props)
