"""Expiry: the expirer's batch path of ``Trigger.EXPIRE``.

The same rule as the table's guard (``transitions.overdue_and_settled``), set-based for
speed: one ``UPDATE … RETURNING`` claims the overdue rows with ``FOR UPDATE SKIP LOCKED``
(safe with several expirers: each takes rows the others do not hold, nobody waits), moves
them to EXPIRED and returns them as plain rows; a payment with a counted transfer still
seen-but-unconfirmed is held open. Each gets its ``payment.expired`` event, the whole
payment object as after the change, in one streamed COPY of the same transaction.

A live payment expires only once its network's settled line passed its ``expires_at``
(``SettledWatermark.settled_at``, written by the settler: the watcher had read the tip at
that time with every block up to it reported, and the settler has applied every one of
those reports; ``payments.watermark``). A watcher, RPC or settler outage, or a settler
behind on its queue, never expires a payment paid on time. Test-mode payments have no
chain and expire on time.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from kassa_common.models import Payment, SettledWatermark, Transfer
from kassa_common.payments.events import record_payment_events
from kassa_common.payments.shape import PAYMENT_COLUMNS, PaymentRow, transfers_of
from kassa_common.payments.transitions import TRANSITIONS, Trigger
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow


def expire_due(session: Session, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Expire up to ``limit`` overdue open payments at once; returns how many."""
    now = now or utcnow()
    transition = TRANSITIONS[Trigger.EXPIRE]
    pending_transfer = sa.exists().where(
        Transfer.payment_id == Payment.id, Transfer.status == TransferStatus.SEEN, Transfer.counted
    )
    settled_past = sa.exists().where(
        SettledWatermark.network == Payment.network, SettledWatermark.settled_at >= Payment.expires_at
    )
    due = (
        sa.select(Payment.id)
        .where(
            Payment.status.in_(transition.sources),
            Payment.expires_at <= now,
            ~pending_transfer,
            sa.or_(Payment.test_mode, settled_past),
        )
        .order_by(Payment.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True, of=Payment)
    )
    has_transfers = sa.exists().where(Transfer.payment_id == Payment.id)  # most have none: no query for them
    result = session.connection().execute(  # Core: a quarter cheaper than through the ORM, which
        sa.update(Payment)  # looks every row up in the session's identity map
        .where(Payment.id == sa.any_(sa.func.array(due.scalar_subquery())))  # by primary key
        .values(status=transition.target, updated_at=now)
        .returning(*PAYMENT_COLUMNS, has_transfers)
    )
    expired: list[PaymentRow] = []
    with_transfers: list[uuid.UUID] = []
    for *columns, transferred in result:
        expired.append(PaymentRow._make(columns))
        if transferred:
            with_transfers.append(expired[-1].id)
    if expired:
        assert transition.target is not None and transition.event is not None  # EXPIRE has both
        _show_expired(session, {p.id for p in expired}, transition.target, now)
        record_payment_events(
            session, expired, transition.event, now=now, transfers=transfers_of(session, with_transfers)
        )
    return len(expired)


def _show_expired(session: Session, ids: set[uuid.UUID], status: str, now: datetime) -> None:
    """The ``Payment``s this session holds (usually none) as the UPDATE left them."""
    for held in list(session.identity_map.values()):
        if isinstance(held, Payment) and held.id in ids:
            set_committed_value(held, "status", status)
            set_committed_value(held, "updated_at", now)
