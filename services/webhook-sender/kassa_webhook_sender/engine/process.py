"""One channel's process: the intake consumer in the main thread, the dispatcher in its own.

SIGTERM stops consuming (the message in hand commits and is acked), then the dispatcher
finishes the sends in progress and records them, then everything closes.

In-process (tests, benchmarks)::

    process = webhooks.main.build(settings).start()   # consumer in a background thread
    ...
    process.stop()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from kassa_common.bootstrap import bootstrap, wire
from kassa_common.config import Settings
from kassa_common.messaging.consumer import Consumer
from kassa_webhook_sender.engine.dispatcher import Dispatcher

log = logging.getLogger("kassa.outbound")
Assemble = Callable[..., "Process"]  # (worker, *, owns_engine, **options) -> Process


@dataclass
class Process:
    consumer: Consumer
    dispatcher: Dispatcher[Any] | None  # None: the channel is off (it only drains its queue)
    engine: Engine | None = None  # disposed on stop when the process built it
    _thread: threading.Thread | None = field(default=None, repr=False)

    def run(self) -> None:
        """Consume in this thread until ``stop()``; the dispatcher runs meanwhile."""
        if self.dispatcher is not None:
            self.dispatcher.start()
        self.consumer.run()

    def start(self) -> Process:
        """Run in background threads (tests)."""
        if self.dispatcher is not None:
            self.dispatcher.start()
        self._thread = threading.Thread(target=self.run, name="outbound-intake", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop consuming, finish and record the sends in progress, close."""
        self.consumer.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.dispatcher is not None:
            self.dispatcher.stop(timeout)
        if self.engine is not None:
            self.engine.dispose()


def build(assemble: Assemble, name: str, settings: Settings, *, engine: Engine | None = None, **options) -> Process:
    """Wire process ``name`` from settings (tests, benchmarks); pass ``engine`` to share one
    (then the caller disposes it). ``options`` as for the channel's ``assemble``."""
    worker = wire(settings, name, engine=engine, pool_size=settings.db_pool_size)
    return assemble(worker, owns_engine=engine is None, **options)


def main(assemble: Assemble, name: str) -> None:
    settings = Settings.from_env()
    worker = bootstrap(settings, name, pool_size=settings.db_pool_size)
    process: Process = assemble(worker)
    if process.dispatcher is not None:
        log.info("%s starting: %s", name, process.dispatcher.channel)
    # SIGTERM: stop taking messages; then finish and record the sends in progress; then close
    worker.run(process.run, on_stop=process.consumer.stop, drain=process.stop)
    log.info("%s stopped", name)
