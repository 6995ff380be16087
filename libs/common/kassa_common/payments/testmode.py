"""Test mode: no chain. A simulated confirmed transfer is written to the outbox and reaches
the settler exactly like a watcher's report, so test payments take the real path (through a
queue of their own, so that a tester's burst never delays live confirmations).

Test payments complete by themselves after ``TEST_MODE_COMPLETE_SECONDS``; on the
checkout page a tester can instead pay now, pay part, or let the payment expire.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Payment
from kassa_common.payments.shape import remaining_units
from kassa_common.payments.transitions import Trigger, apply
from kassa_common.statuses import PaymentStatus, TransferStatus
from kassa_common.timefmt import utcnow


class NotTestPayment(Exception):
    """A test-mode control was used on a live payment."""


def simulate_transfer(session: Session, payment: Payment, amount_units: int, *, now: datetime | None = None) -> str:
    """Queue a confirmed transfer of ``amount_units`` to a test payment; returns its tx hash."""
    if not payment.test_mode:
        raise NotTestPayment(payment.short_id)
    tx_hash = "test_tx_" + secrets.token_hex(16)
    report = TransferReport(
        TransferStatus.CONFIRMED,
        payment.network,
        tx_hash,
        0,
        payment.token,
        payment.address,
        amount_units,
        confirmations=payment.required_confirmations,
        simulated=True,
    )
    outbox.record(
        session,
        report.to_message(new_event_id()),
        merchant_id=payment.merchant_id,
        test_mode=True,
        payment_id=payment.id,
        now=now,
    )
    return tx_hash


def pay(session: Session, payment: Payment, *, part: bool = False) -> str:
    """The checkout's "pay" (the remainder) or "pay part" (half of it) for a test payment."""
    if not payment.test_mode:
        raise NotTestPayment(payment.short_id)
    now = utcnow()
    payment = apply(session, payment.id, Trigger.TEST_PAY, now=now, test_simulated_at=now)
    units = remaining_units(payment)
    return simulate_transfer(session, payment, max(units // 2, 1) if part else units, now=now)


def let_expire(session: Session, payment: Payment) -> Payment:
    """The checkout's "let it expire": no auto-completion, due now; the expirer does the rest."""
    if not payment.test_mode:
        raise NotTestPayment(payment.short_id)
    now = utcnow()
    return apply(session, payment.id, Trigger.TEST_LET_EXPIRE, now=now, test_auto_complete=False, expires_at=now)


def complete_due_test_payments(
    session: Session, after: timedelta, *, now: datetime | None = None, limit: int = 500
) -> int:
    """Pay in full every test payment left PENDING for ``after`` (unless told not to)."""
    now = now or utcnow()
    due = session.scalars(
        sa.select(Payment)
        .where(
            Payment.test_mode,
            Payment.status == PaymentStatus.PENDING,
            Payment.test_simulated_at.is_(None),
            Payment.test_auto_complete,
            Payment.created_at <= now - after,
        )
        .order_by(Payment.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    for payment in due:
        payment.test_simulated_at = now
        simulate_transfer(session, payment, remaining_units(payment), now=now)
    return len(due)
