"""Retention: rows past their window are deleted, a batch per transaction.

What is kept, and for how long:

- events: 30 days (``EVENT_DAYS``; the API reads them that long, DESIGN §3), and only once
  published; deleting one also deletes its webhook deliveries, their attempts and its
  notifications (foreign keys with ON DELETE CASCADE), long finished by then (webhook
  retries end after 3 days);
- delivery attempts: as long as events;
- processed-message ids (consumer idempotency): 72 hours, well past any redelivery;
- idempotency keys: their TTL (``IDEMPOTENCY_TTL_HOURS``, 24 h): an older key starts afresh
  anyway;
- the audit log (``kassa_common.audit``): ``AUDIT_LOG_DAYS`` (365 by default).

Each batch takes at most ``batch`` rows through the ``created_at`` index, skipping rows
another transaction holds (``FOR UPDATE SKIP LOCKED``), and deletes them by ``ctid``: short
transactions that never wait for, nor block, the writers. The expirer runs it now and then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.db import unit_of_work
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.retention")
EVENT_DAYS = 30
PROCESSED_HOURS = 72
AUDIT_DAYS = 365


@dataclass(frozen=True)
class Window:
    table: str
    keep: timedelta
    only: str = "TRUE"  # rows that may go, besides their age


def windows(idempotency_ttl: timedelta, audit_keep: timedelta = timedelta(days=AUDIT_DAYS)) -> list[Window]:
    return [
        Window("delivery_attempts", timedelta(days=EVENT_DAYS)),
        Window("events", timedelta(days=EVENT_DAYS), only="published_at IS NOT NULL"),
        Window("processed_messages", timedelta(hours=PROCESSED_HOURS)),
        Window("idempotency_keys", idempotency_ttl),
        Window("audit_log", audit_keep),
    ]


def purge(
    sessions: sessionmaker[Session],
    idempotency_ttl: timedelta,
    *,
    batch: int = 5000,
    max_batches: int = 20,
    now: datetime | None = None,
    audit_keep: timedelta = timedelta(days=AUDIT_DAYS),
) -> dict[str, int]:
    """Delete what is past its window, ``batch`` rows per transaction, at most ``max_batches``
    per table per call (the rest waits for the next call). Returns rows deleted per table."""
    now = now or utcnow()
    deleted: dict[str, int] = {}
    for w in windows(idempotency_ttl, audit_keep):
        total = 0
        for _ in range(max_batches):
            with unit_of_work(sessions) as s:
                n = cast(
                    sa.CursorResult[Any],
                    s.execute(
                        sa.text(
                            f"DELETE FROM {w.table} WHERE ctid = ANY(ARRAY("
                            f"SELECT ctid FROM {w.table} WHERE created_at < :cut AND {w.only} "
                            f"LIMIT :batch FOR UPDATE SKIP LOCKED))"
                        ),
                        {"cut": now - w.keep, "batch": batch},
                    ),
                ).rowcount
            total += n
            if n < batch:
                break
        deleted[w.table] = total
    if any(deleted.values()):
        log.info("retention purged %s", ", ".join(f"{n} {t}" for t, n in deleted.items() if n))
    return deleted
