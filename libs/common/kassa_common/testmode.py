"""Test mode: no chain. A simulated confirmed transfer is queued through the outbox and
reaches the settler exactly like a watcher's report, so test payments take the real path."""
from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.events import record_message
from kassa_common.models import Payment
from kassa_common.timefmt import utcnow

TRANSFER_CONFIRMED = "chain.transfer.confirmed"


def simulate_transfer(session: Session, payment: Payment, amount_units: int, *, now: datetime | None = None) -> str:
    """Queue a confirmed transfer of ``amount_units`` to a test payment; returns its tx hash."""
    if not payment.test_mode:
        raise ValueError("only test-mode payments can be paid by simulation")
    tx_hash = "test_tx_" + secrets.token_hex(16)
    record_message(
        session, merchant_id=payment.merchant_id, test_mode=True, payment_id=payment.id,
        routing_key=TRANSFER_CONFIRMED, now=now,
        body={"network": payment.network, "tx_hash": tx_hash, "log_index": 0, "token": payment.token,
              "to": payment.address, "amount_units": str(amount_units), "block_number": None, "block_hash": None,
              "confirmations": payment.required_confirmations},
    )
    return tx_hash


def remaining_units(payment: Payment) -> int:
    return max(int(payment.crypto_amount_units) - int(payment.amount_received_units), 0)


def complete_due_test_payments(session: Session, after: timedelta, *, now: datetime | None = None,
                               limit: int = 500) -> int:
    """Pay in full every test payment left PENDING for ``after`` (unless told not to)."""
    now = now or utcnow()
    due = session.scalars(
        sa.select(Payment)
        .where(Payment.test_mode, Payment.status == "PENDING", Payment.test_simulated_at.is_(None),
               Payment.test_auto_complete, Payment.created_at <= now - after)
        .order_by(Payment.created_at).limit(limit).with_for_update(skip_locked=True)
    ).all()
    for payment in due:
        payment.test_simulated_at = now
        simulate_transfer(session, payment, remaining_units(payment), now=now)
    return len(due)
