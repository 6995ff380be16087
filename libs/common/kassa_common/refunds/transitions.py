"""The refund state machine (DESIGN §8) and its transitions.

Every change of an existing refund's status goes through ``_transition``: the caller holds
the refund's row lock (``lock``); it checks the move against ``MOVES``, updates the row and
writes the event (the refund object) to the outbox, all in the caller's transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.errors import InvalidTransition
from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import EventType, PaymentEvent
from kassa_common.models import Payment, Refund
from kassa_common.refunds.shape import refund_out
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import iso, utcnow

AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED, CANCELED, EXPIRED = RefundStatus
# the refunds whose amount is no longer refundable (all but the canceled and expired)
ACTIVE = frozenset({AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED})

# event -> (the statuses it leaves from, the status it leads to)
MOVES: dict[EventType, tuple[frozenset[RefundStatus], RefundStatus]] = {
    EventType.REFUND_CLAIMED: (frozenset({AWAITING_ADDRESS}), AWAITING_PAYMENT),
    EventType.REFUND_COMPLETED: (frozenset({AWAITING_PAYMENT}), COMPLETED),
    EventType.REFUND_CANCELED: (frozenset({AWAITING_ADDRESS, AWAITING_PAYMENT}), CANCELED),
    EventType.REFUND_EXPIRED: (frozenset({AWAITING_ADDRESS}), EXPIRED),
    EventType.REFUND_REORGED: (frozenset({COMPLETED}), AWAITING_PAYMENT),
}


def refusal(status: str, event_type: EventType) -> str | None:
    """Why a refund in ``status`` cannot take this move, or None when it can."""
    sources, _target = MOVES[event_type]
    if status not in sources:
        return f"a {status} refund cannot be {event_type.removeprefix('refund.')}"
    return None


def lock(session: Session, refund_id: uuid.UUID) -> Refund:
    """The refund read ``FOR UPDATE`` (fresh from the database)."""
    stmt = sa.select(Refund).where(Refund.id == refund_id).with_for_update().execution_options(populate_existing=True)
    return session.execute(stmt).scalar_one()


def checkout_base_of(session: Session, refund: Refund) -> str:
    """``CHECKOUT_URL`` as it was when the refund's payment was made (its checkout URL is
    ``{CHECKOUT_URL}/pay/{short_id}``): the claim URL of the refund's events."""
    url = session.scalar(sa.select(Payment.checkout_url).where(Payment.id == refund.payment_id)) or ""
    return url.rsplit("/pay/", 1)[0]


def record_refund_event(
    session: Session, refund: Refund, event_type: EventType, *, now: datetime, checkout_url: Any = None
) -> None:
    """The event of a refund's change, in the outbox (``data``: the refund object)."""
    shown = refund_out(refund, checkout_url if checkout_url is not None else checkout_base_of(session, refund))
    data = {"refund_id": shown["id"], **shown}
    event = PaymentEvent(new_event_id(), event_type, iso(now), refund.test_mode, data)
    outbox.record(
        session,
        event.to_message(),
        merchant_id=refund.merchant_id,
        test_mode=refund.test_mode,
        payment_id=refund.payment_id,
        now=now,
    )


def _transition(
    session: Session,
    refund: Refund,
    new_status: RefundStatus,
    event_type: EventType,
    *,
    now: datetime | None = None,
    **changes: Any,
) -> Refund:
    """Move the refund (locked by the caller: ``lock``) to ``new_status`` with the column
    ``changes``, and write ``event_type`` to the outbox. Raises InvalidTransition (409) when
    the move is not allowed from its status."""
    _sources, target = MOVES[event_type]
    if target != new_status:
        raise ValueError(f"{event_type} leads to {target}, not {new_status}")
    reason = refusal(refund.status, event_type)
    if reason:
        raise InvalidTransition(reason)
    now = now or utcnow()
    refund.status = new_status
    refund.updated_at = now
    for column, value in changes.items():
        setattr(refund, column, value)
    session.flush()
    record_refund_event(session, refund, event_type, now=now)
    return refund


def create_refund(*args: Any, **kwargs: Any) -> Refund:
    raise NotImplementedError


def claim_refund(*args: Any, **kwargs: Any) -> Refund:
    raise NotImplementedError


def cancel_refund(*args: Any, **kwargs: Any) -> Refund:
    raise NotImplementedError


def expire_refunds(*args: Any, **kwargs: Any) -> int:
    raise NotImplementedError
