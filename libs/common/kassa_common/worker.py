"""A process's dependencies (``Worker``, built by ``kassa_common.bootstrap``) and the ways a
worker runs until told to stop.

The ``run`` family turns SIGTERM/SIGINT into the one stop order every worker keeps: stop
taking work, finish what is in hand (its transaction commits, its message is acked),
then close the connections.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.config import Settings
from kassa_common.messaging import topology as bus_topology
from kassa_common.messaging.consumer import Consumer, Handler
from kassa_common.messaging.publisher import Publisher

log = logging.getLogger("kassa.worker")


def run_until_stopped(run: Callable[[], None], on_stop: Callable[[], None]) -> None:
    """Run ``run`` in the main thread; SIGTERM/SIGINT call ``on_stop`` (once)."""
    stopped = threading.Event()

    def _signal(signum, _frame) -> None:
        if not stopped.is_set():
            stopped.set()
            log.info("stopping on signal %s", signum)
            on_stop()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    run()


def run_together(runs: Iterable[Callable[[], None]]) -> None:
    """Run each of ``runs`` in a thread of its own; return once every one has returned."""
    threads = [threading.Thread(target=run, name=f"worker-{i}", daemon=True) for i, run in enumerate(runs)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # in short waits: the main thread must stay free to take SIGTERM


def loop(tick: Callable[[], bool], stop: threading.Event, interval: float) -> None:
    """Polling workers: call ``tick`` until stopped; wait ``interval`` when it had nothing to do.

    While the database or the broker is unreachable the waits grow (with jitter, up to 30 s)
    instead of failing every ``interval``; the first successful tick resets them."""
    backoff = transient.Backoff()
    while not stop.is_set():
        try:
            busy = tick()
            backoff.reset()
        except Exception as exc:
            if transient.is_transient(exc):
                delay = backoff.next()
                log.warning("infrastructure unreachable (%s); next try in %.1fs", type(exc).__name__, delay)
                stop.wait(delay)
                continue
            log.exception("tick failed")
            busy = False
        if not busy:
            stop.wait(interval)


@dataclass
class Worker:
    """One process's dependencies, and the ways it runs until told to stop."""

    name: str
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    topology: bus_topology.Topology

    @property
    def connection_name(self) -> str:
        """How the process shows up in PostgreSQL and RabbitMQ: ``kassa-<name>``."""
        return f"kassa-{self.name}"

    # -- factories ----------------------------------------------------------------------
    def publisher(self, label: str | None = None) -> Publisher:
        """A confirming publisher on the topology's exchange (declared on each connect).

        ``label`` tells apart several publishers of one process (e.g. one per network).
        """
        name = f"{self.connection_name}-{label}" if label else self.connection_name
        return Publisher(self.settings.rabbitmq_url, self.topology.exchange, name=name, declare=self.topology.declare)

    def consumer(self, queue: bus_topology.QueueSpec, handler: Handler, **options: Any) -> Consumer:
        """A consumer of ``queue`` that runs ``handler`` in one transaction per message and
        acks after commit (``options``: ``prefetch``, ``on_committed``)."""
        return Consumer(
            self.settings.rabbitmq_url,
            self.topology,
            queue,
            handler,
            self.sessions,
            name=self.connection_name,
            **options,
        )

    # -- running ------------------------------------------------------------------------
    def run(
        self, run: Callable[[], None], on_stop: Callable[[], None], *, drain: Callable[[], None] | None = None
    ) -> None:
        """Run ``run`` until SIGTERM/SIGINT calls ``on_stop`` (stop taking work) and ``run``
        returns; then ``drain`` finishes work handed elsewhere, then the engine closes."""
        try:
            run_until_stopped(run, on_stop)
        finally:
            try:
                if drain is not None:
                    drain()
            finally:
                self.close()

    def until_stopped(self, body: Callable[[threading.Event], None]) -> None:
        """Run ``body(stop)``, a loop of its own that returns once ``stop`` is set."""
        stop = threading.Event()
        self.run(lambda: body(stop), stop.set)

    def poll(self, tick: Callable[[], bool], interval: float) -> None:
        """Call ``tick`` (True when it had work) until stopped; see :func:`loop`."""
        self.until_stopped(lambda stop: loop(tick, stop, interval))

    def close(self) -> None:
        self.engine.dispose()
