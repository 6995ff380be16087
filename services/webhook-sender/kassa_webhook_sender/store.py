"""The dispatcher's SQL: claim due deliveries under a lease, record attempt outcomes.

A claim sets ``lease_until`` on rows picked with ``FOR UPDATE SKIP LOCKED``: concurrent
senders claim disjoint rows, and a crashed sender's claims become due again once the
lease runs out. Recording an outcome clears the lease.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.db import unit_of_work
from kassa_common.messages import DeliveryStatus
from kassa_common.models import DeliveryAttempt, WebhookDelivery
from kassa_common.timefmt import utcnow

CLAIM = """
    WITH due AS (
        SELECT id FROM webhook_deliveries
        WHERE status = :pending AND next_attempt_at <= now()
          AND (lease_until IS NULL OR lease_until < now()) {only}
        ORDER BY next_attempt_at
        LIMIT :n
        FOR UPDATE SKIP LOCKED
    )
    UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => :lease)
    FROM due, webhook_endpoints w, events e
    WHERE d.id = due.id AND w.id = d.endpoint_id AND e.id = d.event_id
    RETURNING d.id, d.event_id, d.event_type, d.attempts, d.created_at,
              w.url, w.secret, w.active, w.deleted_at, e.payload,
              CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret
"""
ENVELOPE_ORDER = ("id", "event", "timestamp", "test_mode", "data")
CLAIM_DUE = sa.text(CLAIM.format(only=""))
CLAIM_IDS = sa.text(CLAIM.format(only="AND id = ANY(:ids)"))


@dataclass(frozen=True)
class Job:
    """One claimed delivery, with what sending it needs."""

    delivery_id: uuid.UUID
    event_id: str
    event_type: str
    attempts: int  # attempts made before this one
    created_at: datetime
    url: str
    secret: str
    endpoint_live: bool  # active and not deleted
    payload: dict[str, Any]
    previous_secret: str | None = None  # still signs beside ``secret`` after a rotation

    @property
    def body(self) -> bytes:
        """The JSON sent (and signed): compact, envelope keys first (JSONB forgets key order)."""
        ordered = {k: self.payload[k] for k in ENVELOPE_ORDER if k in self.payload}
        ordered.update(self.payload)
        return json.dumps(ordered, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Outcome:
    """What became of a claimed job: an attempt, a give-up without one, or a release."""

    job: Job
    status: DeliveryStatus | None = None  # None: release the claim untouched
    attempted_at: datetime | None = None
    status_code: int | None = None
    duration_ms: int = 0
    response_body: str | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None

    @property
    def attempted(self) -> bool:
        return self.attempted_at is not None


def claim(sessions: sessionmaker[Session], n: int, lease_seconds: float,
          ids: Sequence[uuid.UUID] | None = None) -> list[Job]:
    """Lease up to ``n`` due deliveries (only among ``ids`` when given)."""
    if n <= 0:
        return []
    params: dict[str, Any] = {"n": n, "lease": lease_seconds, "pending": DeliveryStatus.PENDING}
    if ids is not None:
        params["ids"] = list(ids)
    with unit_of_work(sessions) as session:
        rows = session.execute(CLAIM_IDS if ids is not None else CLAIM_DUE, params).all()
    return [Job(r.id, r.event_id, r.event_type, r.attempts, r.created_at, r.url, r.secret,
                bool(r.active) and r.deleted_at is None, r.payload, r.previous_secret) for r in rows]


def _text(value: str | None) -> str | None:
    return value.replace("\x00", "") if value is not None else None  # PostgreSQL text holds no NUL


def record(sessions: sessionmaker[Session], outcomes: Iterable[Outcome]) -> None:
    """Write every outcome in one transaction: attempt rows, delivery rows, released leases."""
    outcomes, now = list(outcomes), utcnow()
    attempts = [{
        "id": uuid.uuid4(), "delivery_id": o.job.delivery_id, "attempt": o.job.attempts + 1,
        "status_code": o.status_code, "duration_ms": o.duration_ms, "response_body": _text(o.response_body),
        "error": _text(o.error), "next_retry_at": o.next_attempt_at, "created_at": o.attempted_at,
    } for o in outcomes if o.attempted]
    updates = [{
        "id": o.job.delivery_id, "status": o.status, "attempts": o.job.attempts + (1 if o.attempted else 0),
        "next_attempt_at": o.next_attempt_at, "lease_until": None, "last_status_code": o.status_code,
        "last_error": _text(o.error), "updated_at": now,
    } for o in outcomes if o.status is not None]
    released = [o.job.delivery_id for o in outcomes if o.status is None]
    with unit_of_work(sessions) as session:
        if attempts:
            session.execute(sa.insert(DeliveryAttempt), attempts)
        if updates:
            session.execute(sa.update(WebhookDelivery), updates)
        if released:
            session.execute(sa.update(WebhookDelivery).where(WebhookDelivery.id.in_(released))
                            .values(lease_until=None))
