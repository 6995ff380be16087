"""Canceling: by the merchant (API, dashboard) or by the customer on the checkout page."""
from __future__ import annotations

from sqlalchemy.orm import Session

from kassa_common.models import Payment
from kassa_common.owner import Owner
from kassa_common.payments.queries import find_payment
from kassa_common.payments.transitions import TRANSITIONS, Trigger, apply


def cancel_payment(session: Session, owner: Owner, ref: str) -> Payment:
    """The owner's payment ``ref`` (id or short id), canceled; InvalidTransition if it cannot be."""
    return apply(session, find_payment(session, owner, ref).id, Trigger.CANCEL)


def cancel(session: Session, payment: Payment) -> Payment:
    """The customer's cancel link on the checkout page."""
    return apply(session, payment.id, Trigger.CANCEL)


def cancelable(payment: Payment) -> bool:
    """Whether the pages offer a cancel button for this payment."""
    return payment.status in TRANSITIONS[Trigger.CANCEL].sources
