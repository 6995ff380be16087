"""The sender: claim a due notification, send it over SMTP, record the outcome; repeat.

Exactly-once as far as SMTP allows, and never silently otherwise:

- never lost: the row is committed (PENDING) before the event's message is acked, and
  stays PENDING until an outcome is recorded; a failure is retried on the webhook
  schedule (``kassa_common.retry``: 5 s, 30 s, 2 min … every 12 h, for 3 days), a 5xx
  refusal of the email itself fails it at once (FAILED, with the server's reply).
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

One thread, one SMTP connection kept open while there is work; ``submit`` (the intake
after commit) wakes it, otherwise it polls every ``poll_interval``.
"""

from __future__ import annotations

import logging
import smtplib
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from prometheus_client import Counter
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.db import unit_of_work
from kassa_common.models import Notification
from kassa_common.retry import DEFAULT_POLICY, RetryPolicy
from kassa_common.statuses import NotificationStatus
from kassa_common.timefmt import utcnow
from kassa_webhook_sender.email import smtp

log = logging.getLogger("kassa.notifier")
CANDIDATES = 8
SERVED_WINDOW = 60  # seconds: emails sent (or under way) to a domain this recently count as its turns
SENT = Counter("kassa_notifier_emails_total", "Emails the notifier sent or gave up on", ["kind", "outcome"])

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
        ORDER BY p.turn, p.next_attempt_at
        LIMIT 1
        FOR UPDATE OF n SKIP LOCKED
    )
    UPDATE notifications n SET lease_until = now() + make_interval(secs => :lease)
    FROM due WHERE n.id = due.id
    RETURNING n.id, n.event_id, n.kind, n.recipient, n.subject, n.body_text, n.body_html, n.attempts,
              n.created_at, due.lease_until IS NOT NULL AS interrupted
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


def claim(sessions: sessionmaker[Session], lease_seconds: float) -> Job | None:
    with unit_of_work(sessions) as session:
        row = session.execute(
            CLAIM,
            {
                "pending": NotificationStatus.PENDING,
                "lease": lease_seconds,
                "candidates": CANDIDATES,
                "window": SERVED_WINDOW,
            },
        ).first()
    return Job(**row._mapping) if row else None


def record(
    sessions: sessionmaker[Session],
    job: Job,
    status: NotificationStatus,
    *,
    error: str | None = None,
    next_attempt_at: datetime | None = None,
) -> None:
    now = utcnow()
    values = {
        "status": status,
        "attempts": job.attempts + 1,
        "lease_until": None,
        "last_error": error,
        "sent_at": now if status == NotificationStatus.SENT else None,
    }
    if next_attempt_at is not None:
        values["next_attempt_at"] = next_attempt_at
    with unit_of_work(sessions) as session:
        session.execute(sa.update(Notification).where(Notification.id == job.id).values(**values))


class EmailSender:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        server: smtp.SmtpServer,
        sender_address: str,
        *,
        retry: RetryPolicy = DEFAULT_POLICY,
        poll_interval: float = 1.0,
        lease_seconds: float = 120,
    ) -> None:
        self.sessions, self.server, self.sender_address = sessions, server, sender_address
        self.retry, self.poll_interval, self.lease_seconds = retry, poll_interval, lease_seconds
        self._conn: smtplib.SMTP | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> EmailSender:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="notifier-sender", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop claiming; the email in hand is sent and recorded first."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._disconnect()

    def submit(self, notification_ids: Iterable[uuid.UUID]) -> None:
        """New rows were committed (the intake calls this): look for work now."""
        self._wake.set()

    def _loop(self) -> None:
        backoff = transient.Backoff(initial=self.poll_interval)
        while not self._stopping.is_set():
            try:
                while not self._stopping.is_set() and self.send_next():
                    pass
                backoff.reset()
                delay = self.poll_interval
            except Exception as exc:
                if not transient.is_transient(exc):
                    log.exception("sending notifications failed")
                delay = backoff.next()
                log.warning("sending notifications failed (%s); next try in %.1fs", type(exc).__name__, delay)
            if not self._wake.wait(delay):
                self._disconnect()  # idle: do not hold the SMTP connection open
            self._wake.clear()

    # -- one email ----------------------------------------------------------------------
    def send_next(self) -> bool:
        """Claim, send and record one due notification; False when none was due."""
        job = claim(self.sessions, self.lease_seconds)
        if job is None:
            return False
        if job.interrupted:
            log.warning(
                "notification %s (%s of %s): an earlier send was interrupted before its outcome was "
                "recorded; sending again, the recipient may get it twice (same Message-ID)",
                job.id,
                job.kind,
                job.event_id,
            )
        try:
            self._send(job)
        except Exception as exc:  # noqa: BLE001 - every SMTP failure is an outcome
            self._disconnect()
            final = smtp.permanent(exc) or not isinstance(exc, OSError)  # smtplib's errors are OSErrors
            self._failed(job, exc, final)
            return final  # the server is unreachable or busy: let it be until the next poll
        self._record(job, NotificationStatus.SENT)
        SENT.labels(job.kind, "sent").inc()
        log.info("notification %s sent (%s of %s)", job.id, job.kind, job.event_id)
        return True

    def _send(self, job: Job) -> None:
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

    def _failed(self, job: Job, exc: Exception, final: bool) -> None:
        """``final``: the email itself was refused (a 5xx about it, or it cannot be composed)."""
        reason = smtp.describe(exc)
        next_at = None if final else self.retry.next_attempt(job.attempts + 1, job.created_at, utcnow())
        log.warning(
            "notification %s (%s of %s) via %s failed (attempt %d): %s; %s",
            job.id,
            job.kind,
            job.event_id,
            self.server,
            job.attempts + 1,
            reason,
            f"retry at {next_at.isoformat()}" if next_at else "giving up",
        )
        if next_at is None:
            self._record(job, NotificationStatus.FAILED, error=reason)
            SENT.labels(job.kind, "failed").inc()
        else:
            self._record(job, NotificationStatus.PENDING, error=reason, next_attempt_at=next_at)

    def _record(self, job: Job, status: NotificationStatus, **fields) -> None:
        """Record the outcome, waiting out a short database outage (the lease covers a long one)."""
        backoff = transient.Backoff()
        while True:
            try:
                record(self.sessions, job, status, **fields)
                return
            except Exception as exc:
                if not transient.is_transient(exc) or self._stopping.is_set():
                    raise
                self._stopping.wait(backoff.next())

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.quit()
            except Exception:  # noqa: BLE001 - already gone
                conn.close()
