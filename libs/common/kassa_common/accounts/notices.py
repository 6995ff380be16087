"""Emails to a merchant about its account (not about a payment): written as PENDING
``notifications`` rows in the caller's transaction, which the notifier sends like any other.

A notification belongs to an event (its Message-ID is made of the event id), so each notice
also writes an internal event row, already marked published: the relay never puts it on
the bus (no webhook carries it) and the events API lists only ``payment.*`` events.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from kassa_common.ids import new_event_id
from kassa_common.models import Event, Merchant, Notification
from kassa_common.statuses import NotificationStatus
from kassa_common.timefmt import utcnow


def email_merchant(
    session: Session,
    merchant_id: uuid.UUID,
    *,
    test_mode: bool,
    event_type: str,
    kind: str,
    subject: str,
    text: str,
    payload: dict[str, Any],
    recipient: str | None = None,
) -> None:
    """Queue one plain-text email to the merchant's address, or to ``recipient`` about the
    merchant (the operator's sign-up notice); ``kind``: 16 characters at most."""
    merchant = session.get(Merchant, merchant_id)
    if merchant is None:
        return
    now, event_id = utcnow(), new_event_id()
    session.add(
        Event(
            id=event_id,
            type=event_type,
            merchant_id=merchant_id,
            test_mode=test_mode,
            payload=payload,
            created_at=now,
            published_at=now,
        )
    )
    session.flush()
    session.add(
        Notification(
            id=uuid.uuid4(),
            event_id=event_id,
            kind=kind,
            recipient=recipient or merchant.email,
            subject=subject,
            body_text=text,
            body_html=None,
            status=NotificationStatus.PENDING,
        )
    )
