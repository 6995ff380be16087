"""The outbox relay: the only code that publishes domain events.

Rows written by ``outbox.record_*`` in the transaction of a change are claimed in
batches (``FOR UPDATE SKIP LOCKED``, so several relays can run), published with
batched confirms, and marked published in the same transaction that claimed them.
If RabbitMQ is down the rows simply wait.

The relay process alone publishes. It polls for what the web commits, and a process whose
commits others wait on (the settler: a payment.completed webhook waits for its event)
wakes it after each commit with ``wake_relay``, a PostgreSQL ``NOTIFY`` on ``WAKE_CHANNEL``
that the relay process ``LISTEN``s to (``listen_for_wakes``): those events leave at once
instead of at the next poll. The NOTIFY is a statement of its own after the writing
transaction has committed, never part of it: a NOTIFY inside a transaction holds a global
lock through its commit, which would serialize every writer; this one costs a round trip
per settler batch. A lost wake-up delays an event by one poll at most.
"""

from __future__ import annotations

import logging
import select
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.db import autocommit, unit_of_work
from kassa_common.messaging.publisher import Message, Publisher, PublishFailed
from kassa_common.models import Event
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.outbox")
BATCH = 500
POLL = 0.1  # seconds between the relay process's looks at the outbox when nobody wakes it
WAKE_CHANNEL = "kassa_outbox"


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
    poll: float = POLL,
    wake: threading.Event | None = None,
) -> None:
    """Relay until ``stop`` (a threading.Event) is set: drain, then wait ``poll`` s or until
    ``wake`` is set, and drain again.

    Polling (an index scan of the unpublished rows) rather than a NOTIFY from every writer:
    a NOTIFY in a transaction serializes every committing transaction on one lock, which
    caps write throughput; ``wake`` (see ``listen_for_wakes``) brings a round forward.
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


def relay_process(
    engine: Engine,
    sessions: sessionmaker[Session],
    publisher: Publisher,
    stop: threading.Event,
    *,
    poll: float = POLL,
) -> None:
    """The relay process's loop: ``run_relay``, woken by the NOTIFYs on ``WAKE_CHANNEL``."""
    wake = threading.Event()
    listener = threading.Thread(target=listen_for_wakes, args=(engine, wake, stop), name="outbox-wakes", daemon=True)
    listener.start()
    try:
        run_relay(sessions, publisher, stop, poll=poll, wake=wake)
    finally:
        stop.set()
        listener.join(5)


def listen_for_wakes(engine: Engine, wake: threading.Event, stop: threading.Event, *, tick: float = 1.0) -> None:
    """``LISTEN`` on ``WAKE_CHANNEL`` until ``stop``, setting ``wake`` on each notification.

    On a connection of its own, for as long as it lives; when it breaks, listen again after
    a backoff (the relay's poll covers the gap) and wake the relay once, for whatever was
    notified meanwhile. ``tick``: how often ``stop`` is looked at; once set, ``wake`` is set
    too, so that a relay waiting out its poll sees it.
    """
    try:
        _listen(engine, wake, stop, tick)
    finally:
        wake.set()


def _listen(engine: Engine, wake: threading.Event, stop: threading.Event, tick: float) -> None:
    backoff = transient.Backoff()
    while not stop.is_set():
        try:
            with autocommit(engine) as conn:
                try:
                    conn.exec_driver_sql(f"LISTEN {WAKE_CHANNEL}")
                    driver: Any = conn.connection.dbapi_connection
                    backoff.reset()
                    wake.set()
                    while not stop.is_set():
                        if select.select([driver], [], [], tick)[0]:
                            driver.poll()
                            if driver.notifies:
                                driver.notifies.clear()
                                wake.set()
                finally:
                    conn.invalidate()  # never back to the pool still listening
        except Exception as exc:  # noqa: BLE001 - the database away: listen again later
            delay = backoff.next()
            log.warning("outbox relay cannot listen for wake-ups (%r); polling, listening again in %.1fs", exc, delay)
            stop.wait(delay)


def wake_relay(engine: Engine) -> None:
    """Wake the relay processes (``NOTIFY``), after a commit whose events should leave at once.

    Never raises: a wake-up that fails only leaves the events to the relay's next poll.
    """
    try:
        with autocommit(engine) as conn:
            conn.exec_driver_sql(f"NOTIFY {WAKE_CHANNEL}")
    except Exception as exc:  # noqa: BLE001 - the events wait for the next poll
        log.warning("could not wake the outbox relay (%r); its next poll publishes the events", exc)
