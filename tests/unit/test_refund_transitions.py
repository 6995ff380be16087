"""The refund state machine of DESIGN §8, read as a table: which trigger may move a refund
from which status, to which status, with which event; every other pair refused. Pure
logic: no database."""

from __future__ import annotations

import pytest

from kassa_common.messaging.messages import EventType
from kassa_common.refunds.transitions import TRANSITIONS, Trigger, refusal
from kassa_common.statuses import RefundStatus

pytestmark = pytest.mark.unit

AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED, CANCELED, EXPIRED = RefundStatus
NEW = None  # a refund not made yet

# (status, trigger): (status it leads to, event it fires). Every pair not here is refused.
TABLE = {
    (NEW, Trigger.CREATE): (AWAITING_ADDRESS, EventType.REFUND_CREATED),
    (AWAITING_ADDRESS, Trigger.CLAIM): (AWAITING_PAYMENT, EventType.REFUND_CLAIMED),
    (AWAITING_PAYMENT, Trigger.COMPLETE): (COMPLETED, EventType.REFUND_COMPLETED),
    (AWAITING_ADDRESS, Trigger.CANCEL): (CANCELED, EventType.REFUND_CANCELED),
    (AWAITING_PAYMENT, Trigger.CANCEL): (CANCELED, EventType.REFUND_CANCELED),
    (AWAITING_ADDRESS, Trigger.EXPIRE): (EXPIRED, EventType.REFUND_EXPIRED),
    (COMPLETED, Trigger.REORG): (AWAITING_PAYMENT, EventType.REFUND_REORGED),
}
PAIRS = [(status, trigger) for status in [NEW, *RefundStatus] for trigger in Trigger]


def test_the_table_is_the_designs():
    assert TRANSITIONS == TABLE


@pytest.mark.parametrize("status, trigger", PAIRS, ids=[f"{s}-{t.name}" for s, t in PAIRS])
def test_a_trigger_applies_from_its_statuses_and_is_refused_from_any_other(status, trigger):
    if (status, trigger) in TABLE:
        assert refusal(status, trigger) is None
    else:
        assert refusal(status, trigger) == f"a {status} refund cannot be {trigger}"


def test_each_trigger_fires_its_own_event_and_every_refund_event_has_its_trigger():
    events = {event for _, event in TRANSITIONS.values()}
    assert {t: {e for (_, tr), (_, e) in TRANSITIONS.items() if tr == t} for t in Trigger} == {
        t: {f"refund.{t.value}"} for t in Trigger
    }
    assert events == {e for e in EventType if e.startswith("refund.")}


def test_canceled_and_expired_are_final_and_only_a_deep_reorg_leaves_completed():
    assert [pair for pair in TRANSITIONS if pair[0] in (CANCELED, EXPIRED)] == []
    assert [pair for pair in TRANSITIONS if pair[0] == COMPLETED] == [(COMPLETED, Trigger.REORG)]


def test_the_refusals_read_as_the_api_answers_them():
    assert refusal(AWAITING_PAYMENT, Trigger.CLAIM) == "a AWAITING_PAYMENT refund cannot be claimed"
    assert refusal(COMPLETED, Trigger.CANCEL) == "a COMPLETED refund cannot be canceled"
    assert refusal(AWAITING_PAYMENT, Trigger.EXPIRE) == "a AWAITING_PAYMENT refund cannot be expired"
