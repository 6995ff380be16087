"""Intake: turn a payment or refund event from the bus into PENDING ``notifications`` rows.

Runs inside the consumer's transaction (which also records the message id), so a
redelivered message creates nothing; the unique (event_id, kind) makes a second intake of
the same event, by whatever path (a redrive, a republished outbox row), create nothing
either. The email is rendered here, once, and stored with the row: the sender only sends
what is stored. The ids of the new rows are returned so that, after commit, the sender
is woken for them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common import urls
from kassa_common.emails import is_valid_email
from kassa_common.messaging.consumer import Delivered, Reject
from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_common.models import Notification
from kassa_common.statuses import NotificationStatus
from kassa_webhook_sender.email import render

log = logging.getLogger("kassa.notifier")
NOTIFIED = (EventType.PAYMENT_COMPLETED, EventType.PAYMENT_PARTIALLY_PAID, EventType.PAYMENT_LATE_PAYMENT)
REFUND_NOTIFIED = (EventType.REFUND_CREATED, EventType.REFUND_CLAIMED)

PAYMENT_OF_REFUND = sa.text("""
    SELECT p.short_id, p.customer_email, p.customer_name, p.checkout_url, r.claim_token
    FROM payments p LEFT JOIN refunds r ON r.id = :refund_id AND r.payment_id = p.id
    WHERE p.id = :payment_id
""")

MERCHANT_OF_EVENT = sa.text("""
    SELECT m.email, coalesce(m.business_name, m.email) AS business_name, m.notify_email
    FROM events e JOIN merchants m ON m.id = e.merchant_id
    WHERE e.id = :event_id
""")


def merchant_of(session: Session, event_id: str) -> render.Merchant | None:
    row = session.execute(MERCHANT_OF_EVENT, {"event_id": event_id}).first()
    return render.Merchant(row.email, row.business_name, row.notify_email) if row else None


def payment_of(session: Session, payment_id: str, refund_id: str) -> render.RefundedPayment | None:
    """The refund's payment, with the refund's claim link: read here, never from the event
    (events carry no claim link), on the ``CHECKOUT_URL`` the payment was made with."""
    row = session.execute(PAYMENT_OF_REFUND, {"payment_id": payment_id, "refund_id": refund_id}).first()
    if row is None:
        return None
    link = urls.claim_url(urls.base_of_checkout(row.checkout_url), row.claim_token) if row.claim_token else None
    return render.RefundedPayment(row.short_id, row.customer_email, row.customer_name, link)


def record(session: Session, event_id: str, emails: list[render.Email]) -> list[uuid.UUID]:
    """One PENDING row per email, none for a (event, kind) already recorded; the new ids."""
    refused = [e for e in emails if not is_valid_email(e.recipient)]
    for e in refused:  # written before the one email rule: never sent to a list or a header
        log.warning("event %s: no %s email, the recipient is not one valid address", event_id, e.kind)
    emails = [e for e in emails if e not in refused]
    if not emails:
        return []
    rows = [
        {
            "id": uuid.uuid4(),
            "event_id": event_id,
            "kind": e.kind,
            "recipient": e.recipient,
            "subject": e.subject,
            "body_text": e.text,
            "body_html": e.html,
            "status": NotificationStatus.PENDING,
        }
        for e in emails
    ]
    stmt = (
        pg_insert(Notification)
        .values(rows)
        .on_conflict_do_nothing(constraint="notifications_event_kind")
        .returning(Notification.id)
    )
    return list(session.scalars(stmt))


def handler(dashboard_url: str) -> Callable[[Session, Delivered], list[uuid.UUID] | None]:
    """The consumer handler: the new notification ids (None when there is nothing to send)."""

    def handle_event(session: Session, msg: Delivered) -> list[uuid.UUID] | None:
        try:
            event = EventEnvelope.from_message(msg.routing_key, msg.body)
            if event.event not in NOTIFIED + REFUND_NOTIFIED:
                return None  # the queue is bound to these only; anything else is not for us
            merchant = merchant_of(session, event.id)
            if merchant is None:
                log.warning("event %s: not in the events table (purged?); no email", event.id)
                return None
            if event.event in REFUND_NOTIFIED:
                payment = payment_of(
                    session, str(uuid.UUID(event.data["payment_id"])), str(uuid.UUID(event.data["id"]))
                )
                if payment is None:
                    log.warning("event %s: its payment is gone; no email", event.id)
                    return None
                emails = render.refund_emails(event, merchant, payment, dashboard_url)
            else:
                emails = render.emails(event, merchant, dashboard_url)
        except (KeyError, ValueError, TypeError, ArithmeticError) as exc:
            raise Reject(f"not a payment event this can email about: {exc!r}") from None
        return record(session, event.id, emails) or None

    return handle_event


def drop_event(session: Session, msg: Delivered) -> None:
    """The handler while SMTP_URL is unset: acknowledge and forget (the queue must not grow)."""
    return
