"""A refund: a claim the merchant pays from their own wallet (DESIGN §8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from kassa_client.models.base import KassaObject

REFUND_STATUSES = ("AWAITING_ADDRESS", "AWAITING_PAYMENT", "COMPLETED", "CANCELED", "EXPIRED")


@dataclass(frozen=True, kw_only=True)
class Refund(KassaObject):
    """``amount`` in token units of the payment's token; ``claim_url`` is the page where
    the customer gives the address (``address`` stays None until then): only answers to a
    ``refunds:manage`` key carry it, never events or webhooks, which say ``claimable``
    instead. ``funds_reorged``: the payment's funds were lost in a deep reorg; check before
    paying. ``payout_amount`` (None until claimed) is what the merchant pays, exactly: the
    amount plus a tag of a few base units by which Kassa knows the payout; ``payout_from``
    is the payout's sender."""

    id: str
    payment_id: str
    status: str
    amount: Decimal
    token: str
    network: str
    reason: str | None = None
    claim_url: str | None = None
    claimable: bool | None = None
    funds_reorged: bool = False
    address: str | None = None
    payout_amount: Decimal | None = None
    payout_from: str | None = None
    transaction_hash: str | None = None
    confirmations: int = 0
    test_mode: bool | None = None
    created_at: datetime
    updated_at: datetime | None = None
    claimed_at: datetime | None = None
    completed_at: datetime | None = None
    canceled_at: datetime | None = None
    expires_at: datetime | None = None
