"""The payment state machine: DESIGN.md section 4 as one table and one ``apply``.

Every change of a payment's state goes through ``apply``: it locks the row, checks the
transition against ``TRANSITIONS``, updates the row and writes the event to the outbox,
all in the caller's transaction. Web requests, the settler and the expirer all call it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from kassa_common.errors import InvalidTransition
from kassa_common.events import record_payment_event
from kassa_common.models import Payment
from kassa_common.timefmt import utcnow

PENDING = "PENDING"
COMPLETED = "COMPLETED"
PARTIALLY_PAID = "PARTIALLY_PAID"
EXPIRED = "EXPIRED"
CANCELED = "CANCELED"
STATUSES = (PENDING, COMPLETED, PARTIALLY_PAID, EXPIRED, CANCELED)
OPEN = frozenset({PENDING, PARTIALLY_PAID})


@dataclass(frozen=True)
class Transition:
    sources: frozenset[str]
    target: str | None  # None: the status stays as it is
    event: str


TRANSITIONS: dict[str, Transition] = {
    "detect": Transition(OPEN, None, "payment.detected"),
    "partially_pay": Transition(OPEN, PARTIALLY_PAID, "payment.partially_paid"),
    "complete": Transition(OPEN, COMPLETED, "payment.completed"),
    "expire": Transition(OPEN, EXPIRED, "payment.expired"),
    "cancel": Transition(frozenset({PENDING}), CANCELED, "payment.canceled"),
    "record_late_payment": Transition(frozenset({EXPIRED, CANCELED}), None, "payment.late_payment"),
}


def lock(session: Session, payment_id: uuid.UUID) -> Payment:
    stmt = (
        sa.select(Payment)
        .where(Payment.id == payment_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return session.execute(stmt).scalar_one()


def apply(
    session: Session,
    payment_id: uuid.UUID,
    trigger: str,
    *,
    now: datetime | None = None,
    **changes: Any,
) -> Payment:
    """Apply ``trigger`` to the payment, with the column ``changes``; record its event.

    Raises ``InvalidTransition`` (and changes nothing) when the payment's current status
    does not allow it.
    """
    transition = TRANSITIONS[trigger]
    payment = lock(session, payment_id)
    if payment.status not in transition.sources:
        raise InvalidTransition(f"a {payment.status} payment cannot {trigger.replace('_', ' ')}")
    now = now or utcnow()
    for column, value in changes.items():
        setattr(payment, column, value)
    if transition.target is not None:
        payment.status = transition.target
    if transition.target == COMPLETED:
        payment.completed_at = now
    payment.updated_at = now
    session.flush()
    record_payment_event(session, payment, transition.event, now=now)
    return payment


def expire_due(session: Session, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Expire up to ``limit`` overdue open payments at once (the expirer's batch path).

    The same rule as ``apply(..., "expire")``, set-based for speed: rows are claimed with
    ``FOR UPDATE SKIP LOCKED`` (safe with several expirers), a payment with a counted
    transfer still seen-but-unconfirmed is held open, and each gets its event.
    """
    from kassa_common.events import record_payment_events
    from kassa_common.models import Transfer

    now = now or utcnow()
    transition = TRANSITIONS["expire"]
    pending_transfer = sa.exists().where(Transfer.payment_id == Payment.id, Transfer.status == "SEEN", Transfer.counted)
    due = session.scalars(
        sa.select(Payment)
        .where(Payment.status.in_(transition.sources), Payment.expires_at <= now, ~pending_transfer)
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
