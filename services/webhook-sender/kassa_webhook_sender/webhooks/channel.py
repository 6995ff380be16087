"""The webhook channel: its rows are ``webhook_deliveries``, each attempt a
``delivery_attempts`` row, its destination the merchant's endpoint, signed HTTP.

A claim leases due rows picked with ``FOR UPDATE SKIP LOCKED``. No endpoint has more than
``per_endpoint`` deliveries under way at once in one sender process
(WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, 4 by default; the dispatcher counts its sends, and
several sender processes each have their own places): a slow or failing receiver with
thousands of due deliveries takes a few sending threads, never all of them, and every
other endpoint's deliveries go out beside it. A claim takes, per endpoint, its earliest due
first and at most ``AHEAD`` times its places less what this process holds already
(``held``), so the next delivery starts the moment a place frees, without a claim between.
Recording an outcome clears the lease, and an endpoint whose every attempt has failed for
``FAILING_DAYS`` is disabled (its merchant emailed).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.accounts import notices
from kassa_common.events import body_of
from kassa_common.statuses import DeliveryStatus
from kassa_common.webhooks.signing import sign
from kassa_webhook_sender.engine.dispatcher import AHEAD, Outcome, Result
from kassa_webhook_sender.webhooks.transport import Request, Transport, sanitize_url

log = logging.getLogger("kassa.webhooks")
CLAIM = """
    WITH busy AS (
        SELECT * FROM unnest(CAST(:held_endpoints AS uuid[]), CAST(:held_counts AS int[])) AS b(endpoint_id, n)
    ), ranked AS (
        SELECT d.id, d.endpoint_id, d.next_attempt_at,
               row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS place
        FROM webhook_deliveries d
        WHERE d.status = :pending AND d.next_attempt_at <= now()
          AND (d.lease_until IS NULL OR d.lease_until < now()) {only}
    ), picked AS (
        SELECT r.id FROM ranked r LEFT JOIN busy b ON b.endpoint_id = r.endpoint_id
        WHERE r.place + coalesce(b.n, 0) <= :ahead
        ORDER BY r.next_attempt_at
        LIMIT :n
    ), due AS (
        SELECT id FROM webhook_deliveries WHERE id IN (SELECT id FROM picked)
          AND status = :pending AND (lease_until IS NULL OR lease_until < now())  -- again, on the row locked
        FOR UPDATE SKIP LOCKED
    )
    UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => :lease)
    FROM due, webhook_endpoints w, events e
    WHERE d.id = due.id AND w.id = d.endpoint_id AND e.id = d.event_id
    RETURNING d.id AS delivery_id, d.event_id, d.event_type, d.attempts, d.created_at, d.endpoint_id,
              d.lease_until AS lease,
              w.url, w.secret, w.active AND w.deleted_at IS NULL AS endpoint_live, e.payload,
              CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret
"""
ENVELOPE_ORDER = ("id", "event", "timestamp", "test_mode", "data")
CLAIM_DUE = sa.text(CLAIM.format(only=""))
CLAIM_IDS = sa.text(CLAIM.format(only="AND d.id = ANY(:ids)"))
DEFAULT_PER_ENDPOINT = 4


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
    endpoint_id: uuid.UUID | None = None
    lease: datetime | None = None  # the lease_until this claim set: its outcome is recorded only while the row has it

    @property
    def body(self) -> bytes:
        """The JSON sent (and signed): compact, envelope keys first (JSONB forgets key order);
        never a refund's claim link (``events.body_of``: an event stored with one loses it)."""
        payload = body_of(self.payload)
        ordered = {k: payload[k] for k in ENVELOPE_ORDER if k in payload}
        ordered.update(payload)
        return json.dumps(ordered, separators=(",", ":")).encode()


def _text(value: str | None) -> str | None:
    return value.replace("\x00", "") if value is not None else None  # PostgreSQL text holds no NUL


# One statement each for any number of outcomes: the rows travel as arrays, unnest() pairs
# them up again. (An executemany of UPDATEs is a round trip per row.)
INSERT_ATTEMPTS = sa.text("""
    INSERT INTO delivery_attempts (id, delivery_id, attempt, status_code, duration_ms, response_body, error,
                                   next_retry_at, created_at)
    SELECT gen_random_uuid(), a.* FROM unnest(CAST(:delivery_ids AS uuid[]), CAST(:attempts AS int[]),
        CAST(:status_codes AS smallint[]), CAST(:durations AS int[]), CAST(:bodies AS text[]),
        CAST(:errors AS text[]), CAST(:next_retries AS timestamptz[]), CAST(:attempted AS timestamptz[])) AS a
""")
# Both apply to a row only while it still carries the claim's own lease (``lease_until`` as
# that claim set it: a later claim's is always later): a sender whose lease ran out and was
# taken over, or whose row a redeliver took back, writes nothing.
UPDATE_DELIVERIES = sa.text("""
    UPDATE webhook_deliveries d
    SET status = u.status, attempts = u.attempts, next_attempt_at = u.next_attempt_at, lease_until = NULL,
        last_status_code = u.status_code, last_error = u.error, updated_at = now()
    FROM unnest(CAST(:ids AS uuid[]), CAST(:statuses AS text[]), CAST(:attempts AS int[]),
                CAST(:next_attempts AS timestamptz[]), CAST(:status_codes AS smallint[]), CAST(:errors AS text[]),
                CAST(:leases AS timestamptz[]))
         AS u(id, status, attempts, next_attempt_at, status_code, error, lease)
    WHERE d.id = u.id AND d.lease_until = u.lease AND d.status = :pending
    RETURNING d.id
""")
RELEASE = sa.text("""
    UPDATE webhook_deliveries d SET lease_until = NULL
    FROM unnest(CAST(:ids AS uuid[]), CAST(:leases AS timestamptz[])) AS u(id, lease)
    WHERE d.id = u.id AND d.lease_until = u.lease
""")


FAILING_DAYS = 3  # an endpoint failing every attempt this long is disabled (as Stripe does)
STREAK_ENDED = sa.text("UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ANY(:ids)")
STREAK_GOES_ON = sa.text(
    "UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, :at) WHERE id = ANY(:ids)"
)
DISABLE_FAILING = sa.text("""
    UPDATE webhook_endpoints SET active = false, disabled_at = now(), updated_at = now()
    WHERE id = ANY(:ids) AND active AND deleted_at IS NULL
      AND failing_since <= now() - make_interval(days => :days)
    RETURNING id, merchant_id, test_mode, url, failing_since
""")


def _failure_streaks(session: Session, attempted: list[Outcome[Job]]) -> None:
    """Track each endpoint's run of failed attempts; disable (and email about) an endpoint
    whose every attempt has failed for ``FAILING_DAYS``. Re-enabling clears the streak."""
    ok = {o.job.endpoint_id for o in attempted if o.status == DeliveryStatus.SUCCEEDED and o.job.endpoint_id}
    failed = {o.job.endpoint_id for o in attempted if o.status != DeliveryStatus.SUCCEEDED and o.job.endpoint_id}
    failed -= ok
    if ok:
        session.execute(STREAK_ENDED, {"ids": list(ok)})
    if not failed:
        return
    first = min(o.attempted_at for o in attempted if o.job.endpoint_id in failed and o.attempted_at)
    session.execute(STREAK_GOES_ON, {"ids": list(failed), "at": first})
    for hook in session.execute(DISABLE_FAILING, {"ids": list(failed), "days": FAILING_DAYS}):
        url = sanitize_url(hook.url)
        notices.email_merchant(
            session,
            hook.merchant_id,
            test_mode=hook.test_mode,
            event_type="webhook.endpoint_disabled",
            kind="webhook_off",
            subject=f"Webhook endpoint disabled: {url}",
            text=(
                f"Every delivery to your {'test' if hook.test_mode else 'live'} webhook endpoint\n{url}\n"
                f"has failed since {hook.failing_since:%Y-%m-%d %H:%M} UTC, so Kassa has disabled it: "
                "no more events are sent to it.\n\n"
                "Once it answers again, re-enable it on the dashboard's Webhooks page, or with "
                'PATCH /webhooks/{id} and {"active": true}.\n'
            ),
            payload={"webhook_endpoint": str(hook.id)},
        )


class Webhooks:
    """Signed HTTP to the merchants' endpoints (``transport``), under the per-endpoint limit."""

    name: str = "webhooks"
    done: str = DeliveryStatus.SUCCEEDED
    log: logging.Logger = log

    def __init__(self, transport: Transport, per_endpoint: int = DEFAULT_PER_ENDPOINT) -> None:
        self.transport, self.per_destination = transport, per_endpoint

    def __str__(self) -> str:
        return f"signed HTTP, private destinations {'allowed' if self.transport.allow_private else 'refused'}"

    def claim(
        self,
        session: Session,
        n: int,
        lease_seconds: float,
        ids: Sequence[uuid.UUID] | None,
        held: Mapping[Hashable, int] | None = None,
    ) -> list[Job]:
        held = held or {}
        params: dict[str, Any] = {
            "n": n,
            "lease": lease_seconds,
            "pending": DeliveryStatus.PENDING,
            "ahead": AHEAD * self.per_destination,
            "held_endpoints": list(held),
            "held_counts": list(held.values()),
        }
        if ids is not None:
            params["ids"] = list(ids)
        rows = session.execute(CLAIM_IDS if ids is not None else CLAIM_DUE, params)
        return [Job(**r._mapping) for r in rows]

    def send(self, job: Job) -> Result:
        if not job.endpoint_live:
            return Result(error="endpoint deleted or disabled", final=True, attempted=False)
        body = job.body
        secrets = (job.secret, job.previous_secret) if job.previous_secret else (job.secret,)
        signature = sign(secrets, int(time.time()), body)
        return self.transport.post(
            Request(job.url, body, signature, job.event_type, job.event_id, str(job.delivery_id))
        )

    def key(self, job: Job) -> uuid.UUID:
        return job.delivery_id

    def destination(self, job: Job) -> Hashable:
        return job.endpoint_id

    def describe(self, job: Job) -> str:
        return f"delivery {job.delivery_id} to {sanitize_url(job.url)}"

    def record(self, session: Session, outcomes: list[Outcome[Job]]) -> None:
        """Every outcome in a few statements: delivery rows, their attempt rows, released
        leases; each only where the row still carries this claim's lease. An outcome whose
        lease was taken (it ran out and another sender claimed the row, or a redeliver took
        the row back) is not recorded at all, attempt included: the row is the new holder's.
        Nor is one whose row is gone (retention deleted its event, and so the delivery): the
        rows are written after the UPDATE finds them, so it never fails the batch."""
        settled = [o for o in outcomes if o.status is not None]
        released = [o for o in outcomes if o.status is None]
        kept: set[uuid.UUID] = set()
        if settled:
            kept = set(
                session.scalars(
                    UPDATE_DELIVERIES,
                    {
                        "ids": [o.job.delivery_id for o in settled],
                        "statuses": [str(o.status) for o in settled],
                        "attempts": [o.job.attempts + (1 if o.attempted else 0) for o in settled],
                        "next_attempts": [o.next_attempt_at for o in settled],
                        "status_codes": [o.result.status_code for o in settled],
                        "errors": [_text(o.result.error) for o in settled],
                        "leases": [o.job.lease for o in settled],
                        "pending": DeliveryStatus.PENDING,
                    },
                )
            )
        for o in settled:
            if o.job.delivery_id not in kept:
                log.warning(
                    "%s: its lease was taken over (it ran out, or a redeliver took the row back), or the "
                    "row is gone (its event deleted), before this outcome was recorded; not recorded (%s, HTTP %s)",
                    self.describe(o.job),
                    o.status,
                    o.result.status_code,
                )
        attempted = [o for o in settled if o.attempted and o.job.delivery_id in kept]
        if attempted:
            session.execute(
                INSERT_ATTEMPTS,
                {
                    "delivery_ids": [o.job.delivery_id for o in attempted],
                    "attempts": [o.job.attempts + 1 for o in attempted],
                    "status_codes": [o.result.status_code for o in attempted],
                    "durations": [o.result.duration_ms for o in attempted],
                    "bodies": [_text(o.result.response_body) for o in attempted],
                    "errors": [_text(o.result.error) for o in attempted],
                    "next_retries": [o.next_attempt_at for o in attempted],
                    "attempted": [o.attempted_at for o in attempted],
                },
            )
        if released:
            session.execute(
                RELEASE, {"ids": [o.job.delivery_id for o in released], "leases": [o.job.lease for o in released]}
            )
        if attempted:
            _failure_streaks(session, attempted)

    def idle(self) -> None:
        pass  # keep-alive connections stay pooled

    def close(self) -> None:
        self.transport.close()
