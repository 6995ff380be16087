"""The payment state machine of DESIGN.md section 4, read as a table: which trigger may
move a payment from which status, to which status, with which event, under which guard.
Pure logic: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from kassa_common.messaging.messages import EventType
from kassa_common.payments.transitions import (
    OPEN,
    STATUSES,
    TRANSITIONS,
    Facts,
    Trigger,
    refusal,
    report_trigger,
    settlement_trigger,
)
from kassa_common.statuses import PaymentStatus, TransferStatus

PENDING, COMPLETED, PARTIALLY_PAID, EXPIRED, CANCELED = PaymentStatus
SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
SEEN_PENDING = "a transfer to the payment is seen and waiting for confirmations"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PAST, FUTURE = NOW - timedelta(minutes=1), NOW + timedelta(minutes=1)

# trigger: (statuses it applies to, status it leads to (None: unchanged), event it fires)
TABLE = {
    Trigger.DETECT: ({PENDING, PARTIALLY_PAID}, None, EventType.PAYMENT_DETECTED),
    Trigger.OBSERVE: ({PENDING, PARTIALLY_PAID}, None, None),
    Trigger.RELEASE: ({PENDING, PARTIALLY_PAID}, None, None),
    Trigger.PARTIALLY_PAY: ({PENDING, PARTIALLY_PAID}, PARTIALLY_PAID, EventType.PAYMENT_PARTIALLY_PAID),
    Trigger.COMPLETE: ({PENDING, PARTIALLY_PAID}, COMPLETED, EventType.PAYMENT_COMPLETED),
    Trigger.EXPIRE: ({PENDING, PARTIALLY_PAID}, EXPIRED, EventType.PAYMENT_EXPIRED),
    Trigger.CANCEL: ({PENDING}, CANCELED, EventType.PAYMENT_CANCELED),
    Trigger.RECORD_LATE_PAYMENT: ({EXPIRED, CANCELED}, None, EventType.PAYMENT_LATE_PAYMENT),
    Trigger.RECORD_OVERPAYMENT: ({COMPLETED}, None, None),
    Trigger.TEST_PAY: ({PENDING, PARTIALLY_PAID}, None, None),
    Trigger.TEST_LET_EXPIRE: ({PENDING, PARTIALLY_PAID}, None, None),
    Trigger.RECORD_SWEEP: (set(PaymentStatus), None, EventType.PAYMENT_SWEPT),
    Trigger.RECORD_WRONG_NETWORK: (set(PaymentStatus), None, EventType.PAYMENT_WRONG_NETWORK),
    # a confirmed transfer lost in a deep reorg: recorded and announced, the status kept
    Trigger.RECORD_REORG: (set(PaymentStatus), None, EventType.PAYMENT_REORGED),
}


def allowed_facts(trigger: Trigger, status: str) -> Facts:
    """Facts under which every guard of ``trigger`` passes."""
    return Facts(status, test_mode=trigger != Trigger.RECORD_SWEEP, expires_at=PAST, transfer_pending=False)


def test_the_table_has_every_trigger_and_only_known_statuses():
    assert set(TRANSITIONS) == set(Trigger) == set(TABLE)
    for t in TRANSITIONS.values():
        assert t.sources <= set(STATUSES)
        assert t.target is None or t.target in STATUSES


@pytest.mark.parametrize("trigger", list(Trigger))
def test_each_trigger_has_the_sources_target_and_event_of_the_design(trigger):
    sources, target, event = TABLE[trigger]
    t = TRANSITIONS[trigger]
    assert (set(t.sources), t.target, t.event) == (sources, target, event)


@pytest.mark.parametrize("trigger, status", [(t, s) for t in Trigger for s in PaymentStatus])
def test_a_trigger_applies_from_its_sources_and_is_refused_from_any_other_status(trigger, status):
    reason = refusal(trigger, allowed_facts(trigger, status), NOW)
    if status in TABLE[trigger][0]:
        assert reason is None
    else:
        assert reason == f"a {status} payment cannot {trigger.replace('_', ' ')}"


def test_completed_is_reached_only_from_an_open_payment_and_never_left():
    leaving = [t for t, tr in TRANSITIONS.items() if COMPLETED in tr.sources and tr.target not in (None, COMPLETED)]
    assert leaving == []
    assert {t for t, tr in TRANSITIONS.items() if tr.target == COMPLETED} == {Trigger.COMPLETE}
    assert OPEN == {PENDING, PARTIALLY_PAID}


@pytest.mark.parametrize(
    "expires_at, pending, refused",
    [
        (PAST, False, None),
        (NOW, False, None),
        (FUTURE, False, "the payment has not reached its expiry time"),
        (PAST, True, SEEN_PENDING),
        (None, False, "the payment has not reached its expiry time"),
    ],
)
def test_expiry_waits_for_the_time_and_for_a_seen_transfer_to_settle(expires_at, pending, refused):
    facts = Facts(PENDING, test_mode=False, expires_at=expires_at, transfer_pending=pending)
    assert refusal(Trigger.EXPIRE, facts, NOW) == refused
    assert TRANSITIONS[Trigger.EXPIRE].needs_transfers


@pytest.mark.parametrize("pending, refused", [(False, None), (True, SEEN_PENDING)])
def test_cancel_is_refused_while_a_counted_transfer_is_seen(pending, refused):
    facts = Facts(PENDING, test_mode=False, expires_at=FUTURE, transfer_pending=pending)
    assert refusal(Trigger.CANCEL, facts, NOW) == refused
    assert TRANSITIONS[Trigger.CANCEL].needs_transfers


@pytest.mark.parametrize("trigger", [Trigger.TEST_PAY, Trigger.TEST_LET_EXPIRE])
@pytest.mark.parametrize("test_mode, refused", [(True, None), (False, "only a test-mode payment can do this")])
def test_the_test_mode_controls_refuse_live_payments(trigger, test_mode, refused):
    assert (
        refusal(trigger, Facts(PENDING, test_mode=test_mode, expires_at=None, transfer_pending=False), NOW) == refused
    )


@pytest.mark.parametrize("status", list(PaymentStatus))
@pytest.mark.parametrize(
    "test_mode, refused", [(False, None), (True, "a test-mode payment has nothing on a chain to sweep")]
)
def test_a_sweep_is_recorded_on_a_live_payment_whatever_its_status(status, test_mode, refused):
    assert (
        refusal(Trigger.RECORD_SWEEP, Facts(status, test_mode=test_mode, expires_at=None, transfer_pending=False), NOW)
        == refused
    )


@pytest.mark.parametrize(
    "status, received, due, tolerance, trigger",
    [
        (PENDING, 100, 100, Decimal(0), Trigger.COMPLETE),
        (PENDING, 150, 100, Decimal(0), Trigger.COMPLETE),  # over-payment completes
        (PENDING, 99, 100, Decimal(0), Trigger.PARTIALLY_PAY),
        (PENDING, 1, 100, Decimal(0), Trigger.PARTIALLY_PAY),
        (PARTIALLY_PAID, 100, 100, Decimal(0), Trigger.COMPLETE),
        (PARTIALLY_PAID, 60, 100, Decimal(0), Trigger.PARTIALLY_PAY),  # another part: another partially_paid
        (PENDING, 98, 100, Decimal("0.02"), Trigger.COMPLETE),  # within the merchant's tolerance
        (PENDING, 97, 100, Decimal("0.02"), Trigger.PARTIALLY_PAY),
        (COMPLETED, 200, 100, Decimal(0), Trigger.RECORD_OVERPAYMENT),
        (EXPIRED, 100, 100, Decimal(0), Trigger.RECORD_LATE_PAYMENT),
        (CANCELED, 5, 100, Decimal(0), Trigger.RECORD_LATE_PAYMENT),
    ],
)
def test_a_confirmed_transfer_completes_part_pays_or_is_recorded(status, received, due, tolerance, trigger):
    chosen = settlement_trigger(status, received, due, tolerance)
    assert chosen == trigger
    assert status in TRANSITIONS[chosen].sources  # what settlement picks is always allowed


# A SEEN or ORPHANED report of a counted transfer: (report, the transfer's status before it
# (None: first report), the payment's status) -> what it does to the payment (None: nothing).
REPORTS = [
    (SEEN, None, PENDING, Trigger.DETECT),
    (SEEN, None, PARTIALLY_PAID, Trigger.DETECT),  # a further part is on its way
    (SEEN, SEEN, PENDING, Trigger.OBSERVE),  # more confirmations
    (SEEN, ORPHANED, PENDING, Trigger.DETECT),  # back in a block after a reorg: detected again
    (SEEN, CONFIRMED, PENDING, None),  # a SEEN report never downgrades a CONFIRMED transfer
    (SEEN, CONFIRMED, PARTIALLY_PAID, None),
    (SEEN, None, COMPLETED, None),  # after the end: recorded, counted only once confirmed
    (SEEN, None, EXPIRED, None),
    (SEEN, SEEN, CANCELED, None),
    (ORPHANED, SEEN, PENDING, Trigger.RELEASE),  # what the seen transfer set is cleared
    (ORPHANED, SEEN, PARTIALLY_PAID, Trigger.RELEASE),
    (ORPHANED, None, PENDING, None),  # never seen: nothing was set
    (ORPHANED, ORPHANED, PENDING, None),
    (ORPHANED, CONFIRMED, PARTIALLY_PAID, None),  # confirmed is final
    (ORPHANED, SEEN, COMPLETED, None),
    (ORPHANED, SEEN, EXPIRED, None),
    # a deep reorg of a block whose transfer was still seen here (its confirmation not yet
    # settled) clears what it set, like an orphan; a confirmed one is the settler's RECORD_REORG
    (REORGED, SEEN, PENDING, Trigger.RELEASE),
    (REORGED, CONFIRMED, PENDING, None),
    (REORGED, CONFIRMED, COMPLETED, None),
    (REORGED, None, PENDING, None),
]


@pytest.mark.parametrize("report, before, status, trigger", REPORTS)
def test_what_a_seen_or_orphaned_report_does(report, before, status, trigger):
    chosen = report_trigger(report, before, status)
    assert chosen == trigger
    assert chosen is None or status in TRANSITIONS[chosen].sources  # what a report picks is always allowed


@pytest.mark.parametrize("report", [SEEN, ORPHANED])
@pytest.mark.parametrize("before", [None, SEEN, CONFIRMED, ORPHANED])
@pytest.mark.parametrize("status", list(PaymentStatus))
def test_a_report_never_touches_a_closed_payment_or_a_confirmed_transfer(report, before, status):
    chosen = report_trigger(report, before, status)
    if status not in OPEN or before == CONFIRMED:
        assert chosen is None
    if report == ORPHANED:
        assert chosen in (None, Trigger.RELEASE) and (chosen is None or before == SEEN)
