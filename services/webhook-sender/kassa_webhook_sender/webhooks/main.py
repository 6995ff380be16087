"""The webhook-sender process: consume ``payment.*`` events into deliveries, send them.

``main()`` runs the intake consumer in the main thread and the dispatcher in its own
threads; SIGTERM stops consuming (the message in hand commits and is acked), then the
dispatcher finishes the sends in progress and records them, then everything closes.

In-process (tests, benchmarks)::

    sender = build(settings).start()   # consumer in a background thread
    ...
    sender.stop()
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from kassa_common.config import Settings
from kassa_common.messaging.consumer import Consumer
from kassa_common.worker import Worker, bootstrap, wire
from kassa_webhook_sender.webhooks.dispatcher import Dispatcher
from kassa_webhook_sender.webhooks.intake import handle_event
from kassa_webhook_sender.webhooks.retry import DEFAULT_POLICY, RetryPolicy
from kassa_webhook_sender.webhooks.transport import Transport

log = logging.getLogger("kassa.webhooks")
NAME = "webhook-sender"


@dataclass
class Sender:
    consumer: Consumer
    dispatcher: Dispatcher
    engine: Engine | None = None  # disposed on stop when the sender built it
    _thread: threading.Thread | None = field(default=None, repr=False)

    def run(self) -> None:
        """Consume in this thread until ``stop()``; the dispatcher runs meanwhile."""
        self.dispatcher.start()
        self.consumer.run()

    def start(self) -> Sender:
        """Run in background threads (tests)."""
        self.dispatcher.start()
        self._thread = threading.Thread(target=self.run, name="webhook-intake", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop consuming, finish and record in-flight sends, close."""
        self.consumer.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        self.dispatcher.stop(timeout)
        if self.engine is not None:
            self.engine.dispose()


def retry_policy(settings: Settings) -> RetryPolicy:
    """DESIGN's schedule, or WEBHOOK_RETRY_SCHEDULE's delays (the last one repeating)."""
    schedule = settings.webhook_retry_schedule
    return RetryPolicy.from_schedule(schedule) if schedule else DEFAULT_POLICY


def build(settings: Settings, *, engine: Engine | None = None, **options) -> Sender:
    """Wire a sender from settings (tests, benchmarks); pass ``engine`` to share one (then the
    caller disposes it). ``options`` as for :func:`assemble`."""
    worker = wire(settings, NAME, engine=engine, pool_size=settings.db_pool_size)
    return assemble(worker, owns_engine=engine is None, **options)


def assemble(
    worker: Worker,
    *,
    owns_engine: bool = False,
    retry: RetryPolicy | None = None,
    threads: int = 32,
    poll_interval: float = 0.25,
    lease_seconds: float = 60,
) -> Sender:
    """The intake consumer and the dispatcher over ``worker``'s sessions and bus.

    ``threads``: concurrent sends. A send mostly waits on the network, so 32 keeps a slow
    receiver from stalling the rest; on 2 cores 16 measured slower, not faster."""
    settings = worker.settings
    transport = Transport(
        timeout=settings.webhook_timeout_seconds, allow_private=settings.webhook_allow_private_urls, connections=threads
    )
    dispatcher = Dispatcher(
        worker.sessions,
        transport,
        threads=threads,
        retry=retry or retry_policy(settings),
        poll_interval=poll_interval,
        lease_seconds=lease_seconds,
        per_endpoint=settings.webhook_max_in_flight_per_endpoint,
    )
    consumer = worker.consumer(worker.topology.webhook_intake, handle_event, on_committed=dispatcher.submit)
    return Sender(consumer, dispatcher, worker.engine if owns_engine else None)


def main() -> None:
    settings = Settings.from_env()
    worker = bootstrap(settings, NAME, pool_size=settings.db_pool_size)
    sender = assemble(worker)
    log.info(
        "webhook sender starting (private destinations %s)",
        "allowed" if settings.webhook_allow_private_urls else "refused",
    )
    # SIGTERM: stop taking messages; then finish and record the sends in progress; then close
    worker.run(sender.run, on_stop=sender.consumer.stop, drain=sender.stop)
    log.info("webhook sender stopped")


if __name__ == "__main__":
    main()
