"""Transfers to a payment's address, read the same way by everyone who needs them: the
payment package (settling, the payment object, its events), the refund package (what a
payment received, so what it can refund) and the settler, which decides with
``payment_for_address`` whether a chain transfer pays a payment (``payments.settle``) or may
pay a claimed refund (``refunds.payouts.apply_report``). Reads only: transfer rows are
written by ``payments.settle`` alone.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Session

from kassa_common.models import Merchant, Payment, Transfer

# What the payment object shows of a transfer (``payments.shape.transfer_to_dict``), and its payment.
TRANSFER_COLUMNS = (
    Transfer.payment_id,
    Transfer.network,
    Transfer.token,
    Transfer.tx_hash,
    Transfer.log_index,
    Transfer.amount_units,
    Transfer.confirmations,
    Transfer.status,
    Transfer.counted,
    Transfer.late,
    Transfer.created_at,
    Transfer.exchange_rate,
)

# How a payment's transfers are shown: oldest first. The one order for a query and for
# transfers already in hand (``oldest_first``).
TRANSFER_ORDER = (Transfer.created_at, Transfer.tx_hash, Transfer.log_index)

# A payment with its merchant's underpayment tolerance, in one round trip.
PAYMENT_AND_TOLERANCE = sa.select(Payment, Merchant.underpayment_tolerance).join(
    Merchant, Merchant.id == Payment.merchant_id
)


def _ids(ids: list[uuid.UUID]) -> sa.BindParameter[Any]:
    """Many ids as one array parameter (``= ANY``): half the cost of an ``IN`` list of a thousand."""
    return sa.bindparam("ids", ids, type_=ARRAY(UUID(as_uuid=True)))


def oldest_first(transfers: Iterable[Any]) -> list[Any]:
    """Transfers in hand, in ``TRANSFER_ORDER``."""
    return sorted(transfers, key=lambda t: tuple(getattr(t, c.key) for c in TRANSFER_ORDER))


def transfers_of(session: Session, payment_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
    """The transfers of these payments (rows of ``TRANSFER_COLUMNS``), oldest first, in one query."""
    ids = list(payment_ids)
    found: dict[uuid.UUID, list[Any]] = defaultdict(list)
    if ids:
        rows = session.execute(
            sa.select(*TRANSFER_COLUMNS).where(Transfer.payment_id == sa.any_(_ids(ids))).order_by(*TRANSFER_ORDER)
        )
        for row in rows:
            found[row.payment_id].append(row)
    return found


def payment_for_address(session: Session, address: str) -> tuple[Payment, Decimal] | None:
    """The payment that owns this receiving address, locked (``FOR UPDATE``), and its
    merchant's underpayment tolerance, read in the same round trip; None: the address is no
    payment's. A settler's batch finds it among what it holds instead
    (``payments.settle.payment_at``).

    Addresses are case-insensitive (EIP-55 mixed case, bech32 in either case), and unique
    as such: the lookup is the unique index on ``lower(address)``.
    """
    row = session.execute(
        PAYMENT_AND_TOLERANCE.where(sa.func.lower(Payment.address) == address.lower())
        .with_for_update(of=Payment)
        .execution_options(populate_existing=True)  # pragma: no mutate
    ).first()
    return (row[0], row[1] or Decimal(0)) if row else None
