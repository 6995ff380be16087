"""The webhook-sender process: ``payment.*`` events into deliveries (``intake``), sent
signed through ``transport`` by the outbound engine's dispatcher (``channel``)."""

from __future__ import annotations

import functools
from typing import Any

from kassa_common.config import Settings
from kassa_common.worker import Worker
from kassa_webhook_sender.engine import process
from kassa_webhook_sender.engine.dispatcher import Dispatcher
from kassa_webhook_sender.engine.retry import DEFAULT_POLICY, RetryPolicy
from kassa_webhook_sender.webhooks.channel import Webhooks
from kassa_webhook_sender.webhooks.intake import handle_event
from kassa_webhook_sender.webhooks.transport import Transport

NAME = "webhook-sender"


def retry_policy(settings: Settings) -> RetryPolicy:
    """DESIGN's schedule, or WEBHOOK_RETRY_SCHEDULE's delays (the last one repeating)."""
    schedule = settings.sender.webhook_retry_schedule
    return RetryPolicy.from_schedule(schedule) if schedule else DEFAULT_POLICY


def assemble(
    worker: Worker, *, owns_engine: bool = False, retry: RetryPolicy | None = None, threads: int = 32, **options: Any
) -> process.Process:
    """The intake consumer and the dispatcher (``options``: its ``poll_interval``,
    ``lease_seconds``) over ``worker``'s sessions and bus.

    ``threads``: concurrent sends. A send mostly waits on the network, so 32 keeps a slow
    receiver from stalling the rest; on 2 cores 16 measured slower, not faster."""
    settings = worker.settings
    transport = Transport(
        timeout=settings.sender.webhook_timeout_seconds,
        allow_private=settings.sender.webhook_allow_private_urls,
        connections=threads,
    )
    dispatcher = Dispatcher(
        worker.sessions,
        Webhooks(transport, settings.sender.webhook_max_in_flight_per_endpoint),
        threads=threads,
        retry=retry or retry_policy(settings),
        **options,
    )
    consumer = worker.consumer(worker.topology.webhook_intake, handle_event, on_committed=dispatcher.submit)
    return process.Process(consumer, dispatcher, worker.engine if owns_engine else None)


build = functools.partial(process.build, assemble, NAME)
main = functools.partial(process.main, assemble, NAME)

if __name__ == "__main__":
    main()
