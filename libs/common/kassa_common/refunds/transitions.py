"""The refund state machine (DESIGN §8) as one table, ``TRANSITIONS``, and ``apply``.

Every refund status change goes through ``apply``, its creation too: it checks the
(status, trigger) pair against the table, updates the row and writes the event (the refund
object) to the outbox, all in the caller's transaction. The caller holds the refund's row
lock (``lock``; a new refund is its own). The table and ``refusal`` are pure, so unit tests
read them without a database. Here too: creating a refund (what is refundable, under the
payment's row lock), the customer's claim, the merchant's cancel, the expirer's batch;
``payouts`` completes a refund and takes a completion back.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.errors import InvalidRefund, InvalidTransition, NotFound, UnsupportedPair
from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_common.models import Payment, Refund
from kassa_common.owner import Owner
from kassa_common.payments.queries import find_payment
from kassa_common.payments.refunded import NONE, decimals_on, refund_totals, refundable
from kassa_common.pricing.amounts import to_base_units, units_text
from kassa_common.refunds.addresses import check_address, claim_height, payout_tag
from kassa_common.refunds.queries import find_by_claim_token, find_refund
from kassa_common.refunds.shape import refund_out
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import iso, utcnow
from kassa_common.transfers import transfers_of

AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED, CANCELED, EXPIRED = RefundStatus
CLAIM_TOKEN_BYTES = 32  # the claim link's secret: 43 URL-safe characters
# the refunds whose amount is no longer refundable (all but the canceled and expired)
ACTIVE = frozenset({AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED})


class Trigger(StrEnum):
    """What happens to a refund; its value is how a refusal says it ("cannot be claimed")."""

    CREATE = "created"  # the merchant refunds (part of) a payment
    CLAIM = "claimed"  # the customer gives an address
    COMPLETE = "completed"  # its payout is confirmed on chain, or its hash proven, or simulated
    CANCEL = "canceled"  # by the merchant, before a payout is seen
    EXPIRE = "expired"  # unclaimed at ``expires_at``
    REORG = "reorged"  # its confirmed payout lost in a reorg deeper than the confirmations


# (status, trigger) -> (new status, event). A pair that is not here is refused. A new refund
# has no status yet (None).
TRANSITIONS: dict[tuple[RefundStatus | None, Trigger], tuple[RefundStatus, EventType]] = {
    (None, Trigger.CREATE): (AWAITING_ADDRESS, EventType.REFUND_CREATED),
    (AWAITING_ADDRESS, Trigger.CLAIM): (AWAITING_PAYMENT, EventType.REFUND_CLAIMED),
    (AWAITING_PAYMENT, Trigger.COMPLETE): (COMPLETED, EventType.REFUND_COMPLETED),
    (AWAITING_ADDRESS, Trigger.CANCEL): (CANCELED, EventType.REFUND_CANCELED),
    (AWAITING_PAYMENT, Trigger.CANCEL): (CANCELED, EventType.REFUND_CANCELED),
    (AWAITING_ADDRESS, Trigger.EXPIRE): (EXPIRED, EventType.REFUND_EXPIRED),
    # mined again, its payout completes it again (``payouts``)
    (COMPLETED, Trigger.REORG): (AWAITING_PAYMENT, EventType.REFUND_REORGED),
}


def refusal(status: str | None, trigger: Trigger) -> str | None:
    """Why a refund in ``status`` cannot take ``trigger``, or None when it can."""
    if (status, trigger) in TRANSITIONS:
        return None
    return f"a {status} refund cannot be {trigger}"


def lock(session: Session, refund_id: uuid.UUID) -> Refund:
    """The refund read ``FOR UPDATE`` (fresh from the database)."""
    stmt = sa.select(Refund).where(Refund.id == refund_id).with_for_update().execution_options(populate_existing=True)
    return session.execute(stmt).scalar_one()


def record_refund_event(session: Session, refund: Refund, event_type: EventType, *, now: datetime) -> None:
    """The event of a refund's change, in the outbox (``data``: the refund object without its
    claim link, which only refunds:manage keys and the dashboard see)."""
    shown = refund_out(refund)
    data = {"refund_id": shown["id"], **shown}
    event = EventEnvelope(new_event_id(), event_type, iso(now), refund.test_mode, data)
    outbox.record(
        session,
        event.to_message(),
        merchant_id=refund.merchant_id,
        test_mode=refund.test_mode,
        payment_id=refund.payment_id,
        now=now,
    )


def apply(session: Session, refund: Refund, trigger: Trigger, now: datetime | None = None, **changes: Any) -> Refund:
    """Apply ``trigger`` to the refund (locked by the caller: ``lock``; for ``CREATE``, a new
    ``Refund``, added to the session here) with the column ``changes``: its new status, and its
    event in the outbox. Raises InvalidTransition (409), changing nothing, when its status does
    not allow it."""
    reason = refusal(refund.status, trigger)
    if reason:
        raise InvalidTransition(reason)
    new_status, event_type = TRANSITIONS[(refund.status, trigger)]  # type: ignore[index]
    now = now or utcnow()
    refund.status = new_status
    refund.updated_at = now
    for column, value in changes.items():
        setattr(refund, column, value)
    if trigger == Trigger.CREATE:
        session.add(refund)
    session.flush()
    record_refund_event(session, refund, event_type, now=now)
    return refund


def _units(amount: Decimal, decimals: int) -> int:
    try:
        return to_base_units(amount, decimals)
    except ValueError:
        raise InvalidRefund(
            f"the amount has more decimal places than the token has ({decimals})",
            [{"field": "amount", "message": f"at most {decimals} decimal places"}],
        ) from None


def _network_of(payment: Payment, left: dict[str, int], network: str | None) -> str:
    """The network to refund on: the one asked for, or the payment's own, or else the only
    other network holding refundable funds (wrong-network funds)."""
    if network is not None:
        return network.upper()
    if payment.network in left or len(left) != 1:
        return payment.network
    return next(iter(left))


def claim_token() -> str:
    return secrets.token_urlsafe(CLAIM_TOKEN_BYTES)


def create_refund(
    session: Session,
    owner: Owner,
    payment_ref: str,
    amount: Decimal | None,
    reason: str | None = None,
    *,
    network: str | None = None,
    claim_days: float = 30.0,
    now: datetime | None = None,
    refund_id: uuid.UUID | None = None,
    actor: audit.Actor = audit.OPERATOR,
) -> Refund:
    """A refund of the merchant's payment (``payment_ref``: its id or short id): ``amount``
    in the payment's token (None: everything refundable), on ``network`` (default: the
    payment's). The payment's row is locked first, so concurrent requests for the same
    payment take turns and together never refund more than was received. NotFound for
    another merchant's or mode's payment; InvalidTransition (409) when nothing is
    refundable; InvalidRefund (400) for an amount above what is or with too many decimals.
    Audited as ``actor``'s (the API and the dashboard pass theirs; the tests' set-up is the operator's)."""
    now = now or utcnow()
    payment = find_payment(session, owner, payment_ref, lock=True)
    transfers = transfers_of(session, [payment.id])[payment.id]
    totals = refund_totals(session, [payment.id]).get(payment.id, NONE)
    left = refundable(payment, transfers, totals)
    chosen = _network_of(payment, left, network)
    decimals = decimals_on(payment, chosen)
    if decimals is None:
        raise UnsupportedPair(
            f"{payment.token} does not exist on {chosen}: nothing of this payment can be refunded there"
        )
    available = left.get(chosen, 0)
    if available <= 0:
        where = "" if chosen == payment.network else f" on {chosen}"
        raise InvalidTransition(f"nothing of this payment is refundable{where}: no confirmed funds are left to refund")
    units = available if amount is None else _units(amount, decimals)
    if units <= 0:
        raise InvalidRefund("the amount must be more than 0", [{"field": "amount", "message": "must be more than 0"}])
    if units > available:
        most = units_text(available, decimals)
        raise InvalidRefund(
            f"the amount is more than is refundable ({most} {payment.token})",
            [{"field": "amount", "message": f"at most {most}"}],
        )
    refund = Refund(
        id=refund_id or uuid.uuid4(),
        merchant_id=payment.merchant_id,
        payment_id=payment.id,
        test_mode=payment.test_mode,
        amount_units=units,
        token=payment.token,
        network=chosen,
        decimals=decimals,
        reason=reason,
        claim_token=claim_token(),
        confirmations=0,
        created_at=now,
        expires_at=now + timedelta(days=claim_days),
    )
    created = apply(session, refund, Trigger.CREATE, now)
    detail = f"{units_text(units, decimals)} {payment.token} on {chosen}, of payment {payment.short_id}"
    return audit_refund(session, created, actor, "refund.created", detail)


def audit_refund(session: Session, refund: Refund, actor: audit.Actor, action: str, detail: str) -> Refund:
    """Record ``action`` on ``refund`` in the audit log (the change's transaction); the refund."""
    mode = "test" if refund.test_mode else "live"
    audit.record(session, refund.merchant_id, actor, action, "refund", refund.id, f"{mode}: {detail}")
    return refund


def claim_refund(
    session: Session, claim_token: str, address: str, *, registry: Any = None, now: datetime | None = None
) -> Refund:
    """The customer's claim: ``address`` (checked for the refund's network: InvalidClaim with
    the reason) becomes the refund's destination, with a payout tag of its own there
    (``payout_amount``), and the merchant is asked to pay it. ``claim_block`` is the
    network's tip, read before the row is locked (a node may be slow). NotFound for an
    unknown token; InvalidTransition (409) once it is no longer awaiting an address
    (claimed, canceled, expired)."""
    now = now or utcnow()
    found = find_by_claim_token(session, claim_token)
    if found is None:
        raise NotFound("refund not found")
    block = claim_height(session, found, registry=registry) if found.status == AWAITING_ADDRESS else None
    refund = lock(session, found.id)
    reason = refusal(refund.status, Trigger.CLAIM)
    if reason:
        raise InvalidTransition(reason)
    if refund.expires_at <= now:
        raise InvalidTransition("this refund's claim has expired")
    destination = check_address(session, refund, address, registry=registry)
    return apply(
        session,
        refund,
        Trigger.CLAIM,
        now,
        address=destination,
        claimed_at=now,
        claim_block=block,
        payout_tag=payout_tag(session, refund, destination, now=now),
    )


def cancel_refund(
    session: Session, owner: Owner, refund_ref: str, *, actor: audit.Actor, now: datetime | None = None
) -> Refund:
    """The merchant's cancel, any time before the refund's payout is seen on chain (409 from
    then on, as for a payment with a seen transfer, and once CANCELED or EXPIRED): funds
    already on their way must not become refundable again. NotFound for another merchant's
    or mode's refund."""
    now = now or utcnow()
    found = find_refund(session, owner, refund_ref)
    refund = lock(session, found.id)
    if refund.status == AWAITING_PAYMENT and refund.transfer_ref is not None:
        raise InvalidTransition(
            f"the refund's payout {refund.transfer_ref.split(':')[0]} is already seen on chain "
            f"({refund.confirmations} confirmation(s)): it cannot be canceled"
        )
    canceled = apply(session, refund, Trigger.CANCEL, now, canceled_at=now)
    return audit_refund(session, canceled, actor, "refund.canceled", f"{refund.token} on {refund.network}")


def expire_refunds(session: Session, now: datetime | None = None, *, limit: int = 500) -> int:  # pragma: no mutate
    """Expire up to ``limit`` refunds still unclaimed at their ``expires_at`` (the expirer's
    batch); each with ``refund.expired``. Rows another transaction holds are left for the
    next round. Returns how many expired."""
    now = now or utcnow()
    due = session.scalars(
        sa.select(Refund)
        .where(Refund.status == AWAITING_ADDRESS, Refund.expires_at <= now)
        .order_by(Refund.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    ).all()
    for refund in due:
        apply(session, refund, Trigger.EXPIRE, now)
    return len(due)
