"""The notifier process: consume payment events into notifications, send them by email.

``main()`` runs the intake consumer in the main thread and the sender in its own thread;
SIGTERM stops consuming (the message in hand commits and is acked), then the sender
finishes the email in hand and records it, then everything closes.

Without ``SMTP_URL`` notifications are off: the process says so once and keeps draining
its queue without recording anything, so the queue does not grow while it waits for a
configuration (turning email on later sends nothing about the events in between).

In-process (tests)::

    notifier = build(settings).start()   # consumer and sender in background threads
    ...
    notifier.stop()
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from kassa_common.config import Settings
from kassa_common.messaging.consumer import Consumer
from kassa_common.retry import RetryPolicy
from kassa_common.worker import Worker, bootstrap, wire
from kassa_webhook_sender.email import intake
from kassa_webhook_sender.email.sending import EmailSender
from kassa_webhook_sender.email.smtp import SmtpServer

log = logging.getLogger("kassa.notifier")
NAME = "notifier"


@dataclass
class Notifier:
    consumer: Consumer
    sender: EmailSender | None  # None: SMTP_URL is unset
    engine: Engine | None = None  # disposed on stop when the notifier built it
    _thread: threading.Thread | None = field(default=None, repr=False)

    def run(self) -> None:
        """Consume in this thread until ``stop()``; the sender runs meanwhile."""
        if self.sender is not None:
            self.sender.start()
        self.consumer.run()

    def start(self) -> Notifier:
        """Run in background threads (tests)."""
        self._thread = threading.Thread(target=self.run, name="notifier-intake", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop consuming, finish and record the email in hand, close."""
        self.consumer.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.sender is not None:
            self.sender.stop(timeout)
        if self.engine is not None:
            self.engine.dispose()


def build(settings: Settings, *, engine: Engine | None = None, **options) -> Notifier:
    """Wire a notifier from settings (tests); pass ``engine`` to share one (then the caller
    disposes it). ``options`` as for :func:`assemble`."""
    worker = wire(settings, NAME, engine=engine)
    return assemble(worker, owns_engine=engine is None, **options)


def assemble(
    worker: Worker,
    *,
    owns_engine: bool = False,
    retry: RetryPolicy | None = None,
    poll_interval: float = 1.0,
    lease_seconds: float = 120,
) -> Notifier:
    """The intake consumer and, when SMTP_URL is set, the sender over ``worker``'s sessions and bus."""
    settings = worker.settings
    queue = worker.topology.notifier
    engine = worker.engine if owns_engine else None
    if not settings.smtp_url:
        return Notifier(worker.consumer(queue, intake.drop_event), None, engine)
    options = {"retry": retry} if retry else {}
    sender = EmailSender(
        worker.sessions,
        SmtpServer.from_url(settings.smtp_url),
        settings.smtp_from,
        poll_interval=poll_interval,
        lease_seconds=lease_seconds,
        **options,
    )
    consumer = worker.consumer(queue, intake.handler(settings.dashboard_url), on_committed=sender.submit)
    return Notifier(consumer, sender, engine)


def main() -> None:
    settings = Settings.from_env()
    worker = bootstrap(settings, NAME)
    notifier = assemble(worker)
    if notifier.sender is None:
        log.warning(
            "email notifications are off: SMTP_URL is not set (payment events are acknowledged and no email is sent)"
        )
    else:
        log.info("notifier starting: email via %s from %s", notifier.sender.server, settings.smtp_from)
    # SIGTERM: stop taking messages; then finish and record the email in hand; then close
    worker.run(notifier.run, on_stop=notifier.consumer.stop, drain=notifier.stop)
    log.info("notifier stopped")


if __name__ == "__main__":
    main()
