"""The outbox relay: the only code that publishes domain events.

Rows written by ``outbox.record_*`` in the transaction of a change are claimed in
batches (``FOR UPDATE SKIP LOCKED``, so several relays can run), published with
batched confirms, and marked published in the same transaction that claimed them.
If RabbitMQ is down the rows simply wait.

Latency: a process whose commits others wait on (the settler: a payment.completed webhook
waits for its event) runs a ``Relay`` of its own and ``wake()``s it after each commit, so
its events leave at once; the relay process polls for everyone else's (the web's) and is
the safety net for all. The wake-up is a thread event, never a statement in the writing
transaction: it costs the commit nothing (NOTIFY would serialize every commit).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.db import unit_of_work
from kassa_common.messaging.publisher import Message, Publisher, PublishFailed
from kassa_common.models import Event
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.outbox")
BATCH = 500


def relay_once(sessions: sessionmaker[Session], publisher: Publisher, *, batch: int = BATCH) -> int:
    """Publish one batch of unpublished events; return how many were published."""
    with unit_of_work(sessions) as session:
        stmt = sa.select(Event).where(Event.published_at.is_(None))
        rows = session.scalars(stmt.order_by(Event.created_at).limit(batch).with_for_update(skip_locked=True)).all()
        if not rows:
            return 0
        publisher.publish_batch(Message(e.id, e.type, e.payload) for e in rows)
        session.execute(sa.update(Event).where(Event.id.in_([e.id for e in rows])).values(published_at=utcnow()))
    return len(rows)


def relay_pending(sessions: sessionmaker[Session], publisher: Publisher, **kw: Any) -> int:
    total = 0
    while True:
        n = relay_once(sessions, publisher, **kw)
        total += n
        if n == 0:
            return total


def run_relay(
    sessions: sessionmaker[Session],
    publisher: Publisher,
    stop: threading.Event,
    *,
    poll: float = 0.1,
    wake: threading.Event | None = None,
) -> None:
    """Relay until ``stop`` (a threading.Event) is set: drain, then wait ``poll`` s or until
    ``wake`` is set, and drain again.

    Polling (an index scan of the unpublished rows) rather than LISTEN/NOTIFY: NOTIFY
    serializes every committing transaction on one lock, which caps write throughput.
    While the broker or the database is unreachable the rows wait and the relay backs off
    (with jitter, up to 30 s); nothing is marked published that the broker did not confirm.
    """
    wake = wake or threading.Event()
    backoff = transient.Backoff()
    try:
        while not stop.is_set():
            wake.clear()
            try:
                relay_pending(sessions, publisher)
                backoff.reset()
            except Exception as exc:
                if not (isinstance(exc, PublishFailed) or transient.is_transient(exc)):
                    log.exception("outbox relay failed")
                delay = backoff.next()
                log.warning("outbox relay cannot publish (%s); rows wait, next try in %.1fs", exc, delay)
                stop.wait(delay)
                continue
            wake.wait(poll)
    finally:
        publisher.close()


class Relay:
    """A relay in a background thread of a process that writes events: ``wake()`` it after a
    commit and what was committed is published at once (``poll``: the safety net)."""

    def __init__(self, sessions: sessionmaker[Session], publisher: Publisher, *, poll: float = 1.0) -> None:
        self.sessions, self.publisher, self.poll = sessions, publisher, poll
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Relay:
        self._thread = threading.Thread(
            target=run_relay,
            name="outbox-relay",
            daemon=True,
            args=(self.sessions, self.publisher, self._stop),
            kwargs={"poll": self.poll, "wake": self._wake},
        )
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the round in progress (what it claimed is published or left for others)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
