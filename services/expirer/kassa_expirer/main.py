"""The expirer process: expires overdue payments, completes test payments, and trims the
consumers' processed-message log. It publishes nothing: its events leave through the
outbox, which the relay alone publishes."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from datetime import timedelta

from kassa_common.bootstrap import bootstrap
from kassa_common.config import Settings
from kassa_common.worker import Worker
from kassa_expirer.jobs import Jobs

PURGE_EVERY = 3600.0
INTERVAL = 0.5


def build_jobs(worker: Worker) -> Jobs:
    return Jobs(
        worker.sessions,
        timedelta(seconds=worker.settings.test_mode_complete_seconds),
        idempotency_ttl=timedelta(hours=worker.settings.idempotency_ttl_hours),
        audit_keep=timedelta(days=worker.settings.audit_log_days),
    )


def with_purge(jobs: Jobs, every: float = PURGE_EVERY) -> Callable[[], bool]:
    """One round of the jobs per tick; rows past their retention window are purged once per
    ``every`` seconds (batched deletes, not worth a round trip per tick)."""
    last_purge = time.monotonic()

    def tick() -> bool:
        nonlocal last_purge
        if time.monotonic() - last_purge > every:
            jobs.purge()
            last_purge = time.monotonic()
        return jobs.tick()

    return tick


def settle_heap() -> None:
    """What startup built lives as long as the process: set it aside (``gc.freeze``), so the
    full collections that expiring a backlog triggers do not scan it again and again (in the
    100k-expiry bench: 0.4-0.6 s of collections down to 0.12-0.15 s)."""
    gc.collect()
    gc.freeze()


def main() -> None:
    worker = bootstrap(Settings.from_env(), "expirer")
    jobs = build_jobs(worker)
    settle_heap()
    worker.poll(with_purge(jobs), interval=INTERVAL)


if __name__ == "__main__":
    main()
