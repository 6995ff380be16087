"""A queue consumer that handles each message in one database transaction and acks it
only after that transaction commits.

The message id is recorded in ``processed_messages`` in the same transaction, so a
redelivered message is a no-op. A failing message is re-published (confirmed) to the
queue's retry queue and acked; after ``MAX_ATTEMPTS``, or when the handler says it can
never succeed (``Reject``), it goes to the dead-letter queue instead. Never auto-ack,
never requeue in a loop.
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

from kassa_common.bus import topology
from kassa_common.bus.publisher import connection_parameters
from kassa_common.db import unit_of_work
from kassa_common.models import ProcessedMessage

log = logging.getLogger("kassa.bus")
ATTEMPT_HEADER = "x-kassa-attempt"


class Reject(Exception):
    """The message can never be handled: dead-letter it at once."""


@dataclass(frozen=True)
class Delivered:
    message_id: str
    routing_key: str
    body: dict[str, Any]
    attempt: int


Handler = Callable[[Session, Delivered], Any]


class Consumer:
    def __init__(self, url: str, topo: topology.Topology, queue: topology.QueueSpec, handler: Handler,
                 sessions: sessionmaker[Session], *, name: str, prefetch: int = 50,
                 on_committed: Callable[[Any], None] | None = None) -> None:
        self.url, self.topo, self.queue, self.handler, self.sessions = url, topo, queue, handler, sessions
        self.name, self.prefetch = name, prefetch
        self.on_committed = on_committed
        self._stopping = threading.Event()
        self._conn: pika.BlockingConnection | None = None
        self._channel = None
        self.handled = 0

    # -- lifecycle ----------------------------------------------------------------------
    def run(self) -> None:
        """Consume until ``stop()``; reconnect with backoff when the broker goes away."""
        backoff = 0.5
        while not self._stopping.is_set():
            try:
                self._consume()
                backoff = 0.5
            except (pika.exceptions.AMQPError, OSError) as exc:
                if self._stopping.is_set():
                    break
                log.warning("consumer %s lost the broker (%r); reconnecting in %.1fs", self.name, exc, backoff)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 10)
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
            msg = Delivered(props.message_id, method.routing_key, payload, attempt)
            result = self.handle(msg)
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


def purge_processed(session: Session, older_than_hours: int = 72) -> int:
    result = session.execute(sa.delete(ProcessedMessage).where(
        ProcessedMessage.created_at < sa.func.now() - sa.text(f"interval '{int(older_than_hours)} hours'")))
    return result.rowcount or 0
