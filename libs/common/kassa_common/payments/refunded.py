"""What a payment has refunded and can still refund, per network: the payment object's
``refunded_amount`` and ``refundable_amount``, and what ``refunds.transitions`` may refund.

Refundable on a network is what reached the payment's address there in the payment's token
and is confirmed (counted, late and wrong-network funds alike), less the refunds on that
network that still hold their amount (every refund but the canceled and expired ones).
Amounts are integers in the token's base units on that network. The rules are pure;
``refund_totals`` reads a payment's refund rows (the payment package writes none: the refund
package reads its rules here, never the other way round).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.networks import shipped
from kassa_common.models import Refund
from kassa_common.pricing.amounts import from_base_units, plain
from kassa_common.statuses import RefundStatus, TransferStatus

# the refunds that hold their amount (not refundable again): all but the canceled and expired
HELD = (RefundStatus.AWAITING_ADDRESS, RefundStatus.AWAITING_PAYMENT, RefundStatus.COMPLETED)


@dataclass(frozen=True)  # pragma: no mutate
class RefundTotals:
    """A payment's refunds, summed per network: ``held`` (awaiting or completed: not
    refundable again) and ``refunded`` (completed)."""

    held: Mapping[str, int] = field(default_factory=dict)
    refunded: Mapping[str, int] = field(default_factory=dict)


NONE = RefundTotals()


def decimals_on(payment: Any, network: str) -> int | None:
    """The decimals of the payment's token on ``network`` (None: not a token there)."""
    if network == payment.network:
        return int(payment.decimals)
    net = shipped().get(network)
    token = net.token(payment.token) if net else None
    return token.decimals if token else None


def received(payment: Any, transfers: Iterable[Any]) -> dict[str, int]:
    """Confirmed funds of the payment's token at its address, per network."""
    found: dict[str, int] = {}
    for t in transfers:
        if t.status == TransferStatus.CONFIRMED and t.token == payment.token:
            found[t.network] = found.get(t.network, 0) + int(t.amount_units)
    return found


def refundable(payment: Any, transfers: Iterable[Any], totals: RefundTotals) -> dict[str, int]:
    """What can still be refunded, per network (only networks with something left)."""
    out = {}
    for network, units in received(payment, transfers).items():
        left = units - totals.held.get(network, 0)
        if left > 0 and decimals_on(payment, network) is not None:
            out[network] = left
    return out


def _total(payment: Any, by_network: Mapping[str, int]) -> str:
    total = Decimal(0)
    for network, units in by_network.items():
        decimals = decimals_on(payment, network)
        if decimals is not None:
            total += from_base_units(units, decimals)
    return plain(total)


def shown(payment: Any, transfers: Iterable[Any], totals: RefundTotals) -> tuple[str, str]:
    """The payment object's ``refunded_amount`` and ``refundable_amount`` (decimal strings in
    the payment's token, every network together)."""
    return _total(payment, totals.refunded), _total(payment, refundable(payment, transfers, totals))


def may_have_refunds(transfers: Iterable[Any]) -> bool:
    """A refund needs funds that were confirmed once: without such a transfer there is none."""
    return any(t.status in (TransferStatus.CONFIRMED, TransferStatus.REORGED) for t in transfers)


def refund_totals(session: Session, payment_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, RefundTotals]:
    """The refunds of these payments summed per network (a payment without any is absent)."""
    ids = list(payment_ids)
    if not ids:
        return {}
    rows = session.execute(
        sa.select(Refund.payment_id, Refund.network, Refund.status, sa.func.sum(Refund.amount_units))
        .where(Refund.payment_id.in_(ids), Refund.status.in_(HELD))
        .group_by(Refund.payment_id, Refund.network, Refund.status)
    )
    held: dict[uuid.UUID, dict[str, int]] = {}
    refunded: dict[uuid.UUID, dict[str, int]] = {}
    for payment_id, network, status, units in rows:
        h = held.setdefault(payment_id, {})
        h[network] = h.get(network, 0) + int(units)
        if status == RefundStatus.COMPLETED:
            r = refunded.setdefault(payment_id, {})
            r[network] = r.get(network, 0) + int(units)
    return {pid: RefundTotals(held[pid], refunded.get(pid, {})) for pid in held}
