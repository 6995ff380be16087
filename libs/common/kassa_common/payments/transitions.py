"""The payment state machine: DESIGN.md section 4 as one table, its guards, and ``apply``.

Every change to an existing payment row goes through ``apply``: it locks the row, checks
the trigger against ``TRANSITIONS`` (source statuses, then the trigger's guard), updates
the row and writes the event (if the trigger has one) to the outbox, all in the caller's
transaction. The table and the guards are pure, so unit tests read them without a
database; only ``lock`` and ``apply`` do I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.errors import InvalidTransition
from kassa_common.messaging.messages import EventType
from kassa_common.models import Payment, Transfer
from kassa_common.payments.events import record_payment_event
from kassa_common.statuses import PaymentStatus, TransferStatus
from kassa_common.timefmt import utcnow

PENDING, COMPLETED, PARTIALLY_PAID, EXPIRED, CANCELED = PaymentStatus
SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
STATUSES: tuple[PaymentStatus, ...] = tuple(PaymentStatus)
OPEN = frozenset({PENDING, PARTIALLY_PAID})


class Trigger(StrEnum):
    DETECT = "detect"  # a counted transfer is seen, not yet confirmed
    OBSERVE = "observe"  # its confirmation count moves on
    RELEASE = "release"  # a seen transfer was orphaned or dropped: what it set is cleared
    PARTIALLY_PAY = "partially_pay"
    COMPLETE = "complete"
    EXPIRE = "expire"
    CANCEL = "cancel"
    RECORD_LATE_PAYMENT = "record_late_payment"  # funds confirmed after EXPIRED or CANCELED
    RECORD_OVERPAYMENT = "record_overpayment"  # more funds after COMPLETED
    TEST_PAY = "test_pay"  # test mode: a simulated transfer is queued
    TEST_LET_EXPIRE = "test_let_expire"  # test mode: due now, never auto-completed
    RECORD_SWEEP = "record_sweep"  # a confirmed sweep moved the forwarder deposit's funds
    RECORD_WRONG_NETWORK = "record_wrong_network"  # a supported token confirmed on another EVM network
    RECORD_REORG = "record_reorg"  # a confirmed transfer lost in a reorg deeper than the confirmations


@dataclass(frozen=True)  # nothing assigns to one  # pragma: no mutate
class Facts:
    """What a guard looks at, read under the row lock."""

    status: str
    test_mode: bool
    expires_at: datetime | None
    transfer_pending: bool  # a counted transfer is seen and not yet confirmed or dropped


Guard = Callable[[Facts, datetime], "str | None"]  # the reason it is refused, or None


def nothing_pending(facts: Facts, _now: datetime) -> str | None:
    """A transfer seen before the end holds the payment open until it confirms or drops."""
    return "a transfer to the payment is seen and waiting for confirmations" if facts.transfer_pending else None


def overdue_and_settled(facts: Facts, now: datetime) -> str | None:
    if facts.expires_at is None or facts.expires_at > now:
        return "the payment has not reached its expiry time"
    return nothing_pending(facts, now)


def test_mode_only(facts: Facts, _now: datetime) -> str | None:
    return None if facts.test_mode else "only a test-mode payment can do this"


def live_only(facts: Facts, _now: datetime) -> str | None:
    return "a test-mode payment has nothing on a chain to sweep" if facts.test_mode else None


@dataclass(frozen=True)  # nothing assigns to one  # pragma: no mutate
class Transition:
    sources: frozenset[PaymentStatus]
    target: PaymentStatus | None  # None: the status stays as it is
    event: EventType | None  # None: a change no webhook reports
    guard: Guard | None = None
    needs_transfers: bool = False  # the guard reads Facts.transfer_pending  # pragma: no mutate


TRANSITIONS: dict[Trigger, Transition] = {
    Trigger.DETECT: Transition(OPEN, None, EventType.PAYMENT_DETECTED),
    Trigger.OBSERVE: Transition(OPEN, None, None),
    Trigger.RELEASE: Transition(OPEN, None, None),
    Trigger.PARTIALLY_PAY: Transition(OPEN, PARTIALLY_PAID, EventType.PAYMENT_PARTIALLY_PAID),
    Trigger.COMPLETE: Transition(OPEN, COMPLETED, EventType.PAYMENT_COMPLETED),
    Trigger.EXPIRE: Transition(OPEN, EXPIRED, EventType.PAYMENT_EXPIRED, overdue_and_settled, needs_transfers=True),
    Trigger.CANCEL: Transition(
        frozenset({PENDING}), CANCELED, EventType.PAYMENT_CANCELED, nothing_pending, needs_transfers=True
    ),
    Trigger.RECORD_LATE_PAYMENT: Transition(frozenset({EXPIRED, CANCELED}), None, EventType.PAYMENT_LATE_PAYMENT),
    Trigger.RECORD_OVERPAYMENT: Transition(frozenset({COMPLETED}), None, None),
    Trigger.TEST_PAY: Transition(OPEN, None, None, test_mode_only),
    Trigger.TEST_LET_EXPIRE: Transition(OPEN, None, None, test_mode_only),
    # funds may be swept whatever the status: paid, part paid, late, or stray tokens
    Trigger.RECORD_SWEEP: Transition(frozenset(STATUSES), None, EventType.PAYMENT_SWEPT, live_only),
    # recorded whatever the status (and mode: a simulated report too), never counted: the
    # funds are the merchant's to recover
    Trigger.RECORD_WRONG_NETWORK: Transition(frozenset(STATUSES), None, EventType.PAYMENT_WRONG_NETWORK),
    # recorded whatever the status, which stays: a delivered order is not silently un-completed;
    # amount_received drops to what still stands, and the merchant decides what to do
    Trigger.RECORD_REORG: Transition(frozenset(STATUSES), None, EventType.PAYMENT_REORGED),
}


def refusal(trigger: Trigger, facts: Facts, now: datetime) -> str | None:
    """Why ``trigger`` cannot apply to a payment in this state, or None when it can."""
    transition = TRANSITIONS[trigger]
    if facts.status not in transition.sources:
        return f"a {facts.status} payment cannot {trigger.replace('_', ' ')}"
    return transition.guard(facts, now) if transition.guard else None


def settlement_trigger(status: str, received_units: int, due_units: int, tolerance: Decimal) -> Trigger:
    """What a newly confirmed, counted transfer does, given the confirmed total it brings."""
    if status == COMPLETED:
        return Trigger.RECORD_OVERPAYMENT
    if status not in OPEN:
        return Trigger.RECORD_LATE_PAYMENT
    if received_units >= Decimal(due_units) * (1 - tolerance):
        return Trigger.COMPLETE
    return Trigger.PARTIALLY_PAY


def report_trigger(report: TransferStatus, before: str | None, status: str) -> Trigger | None:
    """What a SEEN, ORPHANED or REORGED report of a counted transfer does to its payment (None: nothing).

    ``before`` is the transfer's status before this report (None: the first report of it).
    A CONFIRMED transfer is final: no later report (an older SEEN redelivered, the same
    transaction re-mined by a reorg) takes it back. A transfer to a closed payment only
    counts once confirmed (``settlement_trigger``).
    """
    if status not in OPEN or before == CONFIRMED:
        return None
    if report == SEEN:
        return Trigger.OBSERVE if before == SEEN else Trigger.DETECT
    if report in (ORPHANED, REORGED) and before == SEEN:
        return Trigger.RELEASE
    return None


# -- I/O ------------------------------------------------------------------------------------


def lock(session: Session, payment_id: uuid.UUID) -> Payment:
    stmt = (
        sa.select(Payment).where(Payment.id == payment_id).with_for_update().execution_options(populate_existing=True)
    )
    return session.execute(stmt).scalar_one()


def transfer_pending(session: Session, payment_id: uuid.UUID) -> bool:
    return bool(
        session.scalar(
            sa.select(
                sa.exists().where(
                    Transfer.payment_id == payment_id, Transfer.status == TransferStatus.SEEN, Transfer.counted
                )
            )
        )
    )


def facts_of(session: Session, payment: Payment, trigger: Trigger) -> Facts:
    """What ``trigger``'s guard looks at, for a payment read under its row lock."""
    # Only the guards of the transitions that need it read it (True: one query more, same answer).
    pending = (
        transfer_pending(session, payment.id) if TRANSITIONS[trigger].needs_transfers else False
    )  # pragma: no mutate
    return Facts(payment.status, payment.test_mode, payment.expires_at, pending)


def apply(
    session: Session,
    payment: uuid.UUID | Payment,
    trigger: Trigger,
    *,
    now: datetime | None = None,
    transfers: list[Any] | None = None,
    **changes: Any,
) -> Payment:
    """Apply ``trigger`` to the payment, with the column ``changes``; record its event.

    ``payment``: its id (the row is locked here), or the ``Payment`` the caller already
    locked in this transaction (read ``FOR UPDATE`` with ``populate_existing``), which saves
    the second round trip. ``transfers``: the payment's (``kassa_common.transfers.transfers_of``) when the
    caller has just read them, for the event's payload.

    Raises ``InvalidTransition`` (and changes nothing) when the payment's current state
    does not allow it.
    """
    transition = TRANSITIONS[trigger]
    if not isinstance(payment, Payment):
        payment = lock(session, payment)
    now = now or utcnow()
    reason = refusal(trigger, facts_of(session, payment, trigger), now)
    if reason is not None:
        raise InvalidTransition(reason)
    for column, value in changes.items():
        setattr(payment, column, value)
    if transition.target is not None:
        payment.status = transition.target
    if transition.target == COMPLETED:
        payment.completed_at = now
    payment.updated_at = now
    session.flush()
    if transition.event is not None:
        record_payment_event(session, payment, transition.event, now=now, transfers=transfers)
    return payment
