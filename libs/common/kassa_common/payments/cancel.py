"""Canceling: by the merchant (API, dashboard) or by the customer on the checkout page.

Only a PENDING payment with no counted transfer seen and waiting for its confirmations can
be canceled (``Trigger.CANCEL``'s guard): the money is on its way, and canceling would turn
it into a late payment. The pages ask ``cancel_refusal`` before they offer the button.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.models import Payment
from kassa_common.owner import Owner
from kassa_common.payments.queries import find_payment
from kassa_common.payments.transitions import Trigger, apply, facts_of, refusal
from kassa_common.timefmt import utcnow


def cancel_payment(session: Session, owner: Owner, ref: str, *, actor: audit.Actor) -> Payment:
    """The owner's payment ``ref`` (id or short id), canceled (audited as ``actor``'s: the
    merchant's API key or dashboard account); InvalidTransition if it cannot be."""
    payment = apply(session, find_payment(session, owner, ref).id, Trigger.CANCEL)
    detail = f"{owner.mode}: {payment.short_id}, {payment.amount} {payment.currency}"
    audit.record(session, owner.merchant_id, actor, "payment.canceled", "payment", payment.id, detail)
    return payment


def cancel(session: Session, payment: Payment) -> Payment:
    """The customer's cancel link on the checkout page."""
    return apply(session, payment.id, Trigger.CANCEL)


def cancel_refusal(session: Session, payment: Payment) -> str | None:
    """Why this payment cannot be canceled now, or None: whether the pages offer a cancel button."""
    return refusal(Trigger.CANCEL, facts_of(session, payment, Trigger.CANCEL), utcnow())
