"""``transitions.apply`` decides on the row as it is under the lock, not on a copy the session
read earlier: a payment canceled by another transaction after this session loaded it
cannot be canceled (or completed) a second time from the stale copy."""

from __future__ import annotations

import uuid

import pytest

from kassa_common.errors import InvalidTransition
from kassa_common.models import Payment
from kassa_common.payments import transitions
from kassa_common.payments.transitions import Trigger
from kassa_common.statuses import PaymentStatus
from tests.support.api import LIVE_PAYMENT


def test_apply_reads_the_locked_row_not_the_copy_the_session_already_holds(sessions, live_merchant, create_payment):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    payment_id = uuid.UUID(p["id"])
    with sessions() as stale, stale.begin():
        held = stale.get(Payment, payment_id)  # kept in its identity map while referenced
        assert held.status == PaymentStatus.PENDING
        with sessions() as other, other.begin():
            transitions.apply(other, payment_id, Trigger.CANCEL)
        with pytest.raises(InvalidTransition):
            transitions.apply(stale, payment_id, Trigger.CANCEL)
        assert held.status == PaymentStatus.CANCELED  # the lock refreshed the copy it held
    with sessions() as s:
        assert s.get(Payment, payment_id).status == PaymentStatus.CANCELED
