"""The notifier process: payment events into ``notifications`` rows (``intake``), sent by
SMTP by the outbound engine's dispatcher (``channel``), one at a time.

Without ``SMTP_URL`` notifications are off: the process says so once and keeps draining
its queue without recording anything, so the queue does not grow while it waits for a
configuration (turning email on later sends nothing about the events in between).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from kassa_common.worker import Worker
from kassa_webhook_sender.email import intake
from kassa_webhook_sender.email.channel import Email
from kassa_webhook_sender.email.smtp import SmtpServer
from kassa_webhook_sender.engine import process
from kassa_webhook_sender.engine.dispatcher import Dispatcher

log = logging.getLogger("kassa.notifier")
NAME = "notifier"


def assemble(
    worker: Worker, *, owns_engine: bool = False, poll_interval: float = 1.0, lease_seconds: float = 120, **options: Any
) -> process.Process:
    """The intake consumer and, when SMTP_URL is set, the dispatcher (``options``: its ``retry``)
    over ``worker``'s sessions and bus: one thread, one claim at a time."""
    settings, queue = worker.settings, worker.topology.notifier
    engine = worker.engine if owns_engine else None
    if not settings.sender.smtp_url:
        log.warning("email notifications are off: SMTP_URL is not set (events are acknowledged, no email is sent)")
        return process.Process(worker.consumer(queue, intake.drop_event), None, engine)
    channel = Email(SmtpServer.from_url(settings.sender.smtp_url), settings.sender.smtp_from)
    dispatcher = Dispatcher(
        worker.sessions,
        channel,
        threads=1,
        max_in_flight=1,
        poll_interval=poll_interval,
        lease_seconds=lease_seconds,
        **options,
    )
    consumer = worker.consumer(queue, intake.handler(settings.dashboard_url), on_committed=dispatcher.wake)
    return process.Process(consumer, dispatcher, engine)


build = functools.partial(process.build, assemble, NAME)
main = functools.partial(process.main, assemble, NAME)

if __name__ == "__main__":
    main()
