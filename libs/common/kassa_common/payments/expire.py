"""Expiry: the expirer's batch path of ``Trigger.EXPIRE``.

The same rule as the table's guard (``transitions.overdue_and_settled``), set-based for
speed: rows are claimed with ``FOR UPDATE SKIP LOCKED`` (safe with several expirers), a
payment with a counted transfer still seen-but-unconfirmed is held open, and each gets
its ``payment.expired`` event in one multi-row insert.

A live payment expires only once the watcher of its network has scanned past its
``expires_at`` (``ChainCursor.scanned_at``: when it last read the tip with every block up
to it reported): a watcher or RPC outage never expires a payment paid on time. Test-mode
payments have no chain and expire on time.
"""
from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from kassa_common.messages import TransferStatus
from kassa_common.models import ChainCursor, Payment, Transfer
from kassa_common.payments.events import record_payment_events
from kassa_common.payments.transitions import TRANSITIONS, Trigger
from kassa_common.timefmt import utcnow


def expire_due(session: Session, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Expire up to ``limit`` overdue open payments at once; returns how many."""
    now = now or utcnow()
    transition = TRANSITIONS[Trigger.EXPIRE]
    pending_transfer = sa.exists().where(Transfer.payment_id == Payment.id, Transfer.status == TransferStatus.SEEN,
                                         Transfer.counted)
    watched_past = sa.exists().where(ChainCursor.network == Payment.network, ChainCursor.scanned_at >= Payment.expires_at)
    due = session.scalars(
        sa.select(Payment)
        .where(Payment.status.in_(transition.sources), Payment.expires_at <= now, ~pending_transfer,
               sa.or_(Payment.test_mode, watched_past))
        .order_by(Payment.expires_at).limit(limit)
        .with_for_update(skip_locked=True, of=Payment)
        .execution_options(populate_existing=True)
    ).all()
    if not due:
        return 0
    session.execute(sa.update(Payment).where(Payment.id.in_([p.id for p in due]))
                    .values(status=transition.target, updated_at=now)
                    .execution_options(synchronize_session=False))  # the loaded rows are set just below
    for p in due:
        set_committed_value(p, "status", transition.target)
        set_committed_value(p, "updated_at", now)
    record_payment_events(session, due, transition.event, now=now)
    return len(due)
