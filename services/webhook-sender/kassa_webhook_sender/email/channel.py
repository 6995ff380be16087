"""The email channel: its rows are ``notifications`` (rendered by intake), its destination
the SMTP server of ``SMTP_URL``, one connection kept open while there is work.

Exactly once as far as SMTP allows, and never silently otherwise:

- never lost: the row is committed (PENDING) before the event's message is acked, and
  stays PENDING until an outcome is recorded; a failure is retried on the engine's schedule
  (the webhooks': 5 s, 30 s, 2 min … every 12 h, for 3 days), a 5xx refusal of the email
  itself fails it at once; while the server is unreachable nothing more is claimed.
- fair across recipient domains: the claim takes the oldest due email of the domain served
  least in the last ``SERVED_WINDOW`` seconds (sent or under way), so a flood of emails to
  one domain (or its slow retries) never holds up another domain's: they take turns.
- never twice silently: one row is claimed at a time (``FOR UPDATE SKIP LOCKED``, a lease),
  sent, and recorded at once, so several notifiers never send the same row. The one
  window left is a crash between the SMTP server's "250 OK" and the commit of SENT: the
  lease then runs out and the row is sent again, and the claim, seeing an expired lease
  (a send whose outcome nobody recorded), logs a warning that it may be a duplicate; the
  copy has the same Message-ID. (At-most-once would lose the email instead: a receipt
  matters more than a rare, recognisable duplicate.)
"""

from __future__ import annotations

import logging
import smtplib
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import Notification
from kassa_common.statuses import NotificationStatus
from kassa_webhook_sender.email import smtp
from kassa_webhook_sender.engine.dispatcher import Outcome, Result

log = logging.getLogger("kassa.notifier")
CANDIDATES = 8
SERVED_WINDOW = 60  # seconds: emails sent (or under way) to a domain this recently count as its turns

CLAIM = sa.text("""
    WITH served AS (
        SELECT lower(split_part(recipient, '@', 2)) AS domain, count(*) AS n FROM (
            SELECT recipient FROM notifications WHERE lease_until > now()
            UNION ALL
            SELECT recipient FROM notifications WHERE sent_at > now() - make_interval(secs => :window)
        ) recent GROUP BY 1
    ), ranked AS (
        SELECT id, next_attempt_at, lower(split_part(recipient, '@', 2)) AS domain,
               row_number() OVER (PARTITION BY lower(split_part(recipient, '@', 2))
                                  ORDER BY next_attempt_at, id) AS place
        FROM notifications
        WHERE status = :pending AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
    ), picked AS (
        SELECT r.id, r.place + coalesce(s.n, 0) AS turn, r.next_attempt_at
        FROM ranked r LEFT JOIN served s ON s.domain = r.domain
        ORDER BY turn, r.next_attempt_at LIMIT :candidates
    ), due AS (
        SELECT n.id, n.lease_until FROM notifications n JOIN picked p ON p.id = n.id
        WHERE n.status = :pending AND (n.lease_until IS NULL OR n.lease_until < now())  -- again, on the row locked
        ORDER BY p.turn, p.next_attempt_at
        LIMIT :n
        FOR UPDATE OF n SKIP LOCKED
    )
    UPDATE notifications n SET lease_until = now() + make_interval(secs => :lease)
    FROM due WHERE n.id = due.id
    RETURNING n.id, n.event_id, n.kind, n.recipient, n.subject, n.body_text, n.body_html, n.attempts,
              n.created_at, due.lease_until IS NOT NULL AS interrupted, n.lease_until AS lease
""")


@dataclass(frozen=True)
class Job:
    id: uuid.UUID
    event_id: str
    kind: str
    recipient: str
    subject: str
    body_text: str
    body_html: str | None
    attempts: int  # attempts recorded before this one
    created_at: datetime
    interrupted: bool  # an earlier claim ran out without an outcome: it may have been sent
    lease: datetime | None = None  # the lease_until this claim set: its outcome is recorded only while the row has it


class Email:
    """SMTP through ``server``, from ``sender_address``; one sending thread (one connection)."""

    name: str = "email"
    done: str = NotificationStatus.SENT
    log: logging.Logger = log
    per_destination: int = 0  # one thread sends them all

    def __init__(self, server: smtp.SmtpServer, sender_address: str) -> None:
        self.server, self.sender_address = server, sender_address
        self._conn: smtplib.SMTP | None = None

    def __str__(self) -> str:
        return f"email via {self.server} from {self.sender_address}"

    def claim(
        self,
        session: Session,
        n: int,
        lease_seconds: float,
        ids: Sequence[uuid.UUID] | None,
        held: Mapping[Hashable, int] | None = None,
    ) -> list[Job]:
        """The next ``n`` due by the fairness rule (hand-offs only wake the dispatcher)."""
        params = {
            "pending": NotificationStatus.PENDING,
            "lease": lease_seconds,
            "candidates": CANDIDATES + n,
            "window": SERVED_WINDOW,
            "n": n,
        }
        return [Job(**row._mapping) for row in session.execute(CLAIM, params)]

    def send(self, job: Job) -> Result:
        if job.interrupted:
            log.warning(
                "notification %s (%s of %s): an earlier send was interrupted before its outcome was "
                "recorded; sending again, the recipient may get it twice (same Message-ID)",
                job.id,
                job.kind,
                job.event_id,
            )
        try:
            message = smtp.compose(
                sender=self.sender_address,
                recipient=job.recipient,
                subject=job.subject,
                text=job.body_text,
                html=job.body_html,
                event_id=job.event_id,
                kind=job.kind,
            )
            if self._conn is None:
                self._conn = self.server.connect()
            self._conn.send_message(message, to_addrs=[job.recipient])  # never the To header's parse of a list
        except Exception as exc:  # noqa: BLE001 - every SMTP failure is an outcome
            self.idle()
            final = smtp.permanent(exc) or not isinstance(exc, OSError)  # smtplib's errors are OSErrors
            return Result(error=smtp.describe(exc), final=final, pause=not final)
        log.info("notification %s sent (%s of %s)", job.id, job.kind, job.event_id)
        return Result()

    def key(self, job: Job) -> uuid.UUID:
        return job.id

    def destination(self, job: Job) -> Hashable:
        return None  # one SMTP server

    def describe(self, job: Job) -> str:
        return f"notification {job.id} ({job.kind} of {job.event_id}) via {self.server}"

    def record(self, session: Session, outcomes: list[Outcome[Job]]) -> None:
        """Each outcome, where the row still carries this claim's lease (and is PENDING): a
        sender whose lease ran out and was taken over records nothing (logged), so a late
        failure never puts SENT back to PENDING."""
        for o in outcomes:
            values: dict[str, object] = {"lease_until": None}
            if o.status is not None:
                values |= {
                    "status": o.status,
                    "attempts": o.job.attempts + 1,
                    "last_error": o.result.error,
                    "sent_at": None,
                }
                if o.status == NotificationStatus.SENT:
                    values["sent_at"] = sa.func.now()
                if o.next_attempt_at is not None:
                    values["next_attempt_at"] = o.next_attempt_at
            mine = sa.and_(Notification.id == o.job.id, Notification.lease_until == o.job.lease)
            if o.status is not None:
                mine = sa.and_(mine, Notification.status == NotificationStatus.PENDING)
            done = session.execute(sa.update(Notification).where(mine).values(**values).returning(Notification.id))
            if done.first() is None and o.status is not None:
                log.warning(
                    "%s: its lease was taken over (it ran out) before this outcome was recorded; not recorded (%s)",
                    self.describe(o.job),
                    o.status,
                )

    def idle(self) -> None:
        """Let the SMTP connection go (idle, or broken by a failure)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.quit()
            except Exception:  # noqa: BLE001 - already gone
                conn.close()

    close = idle
