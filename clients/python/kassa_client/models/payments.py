"""A payment, its transfers and the funds that reached it on another network."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from kassa_client.models.base import KassaObject

PAYMENT_STATUSES = ("PENDING", "COMPLETED", "PARTIALLY_PAID", "EXPIRED", "CANCELED")


@dataclass(frozen=True, kw_only=True)
class Transfer(KassaObject):
    """A transfer to the payment's address, counted or not (``reason`` says why not)."""

    network: str
    token: str
    tx_hash: str
    log_index: int
    amount: Decimal
    confirmations: int
    status: str
    counted: bool
    reason: str | None = None
    late: bool = False
    created_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class WrongNetworkFunds(KassaObject):
    """A supported token that reached the payment's address on another EVM network: not
    counted, recoverable (``recovery``: ``sweep`` or ``wallet``)."""

    network: str
    token: str
    amount: Decimal
    transaction_hash: str
    log_index: int
    recovery: str


@dataclass(frozen=True, kw_only=True)
class Payment(KassaObject):
    """The payment object of the API and of every ``payment.*`` webhook's ``data``.

    ``amount`` is in the payment's currency (USD unless ``currency`` says otherwise);
    ``crypto_amount``, ``amount_received`` and the transfers' amounts are exact token
    units. ``status`` is one of ``PAYMENT_STATUSES`` (a newer API may add others)."""

    id: str
    short_id: str
    status: str
    amount: Decimal
    token: str
    network: str
    address: str
    crypto_amount: Decimal
    amount_received: Decimal
    exchange_rate: Decimal | None = None
    confirmations: int = 0
    required_confirmations: int = 0
    transaction_hash: str | None = None
    checkout_url: str
    customer_email: str | None = None
    customer_name: str | None = None
    redirect_url: str | None = None
    cancel_url: str | None = None
    product_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    test_mode: bool
    expires_at: datetime
    created_at: datetime
    updated_at: datetime | None = None
    completed_at: datetime | None = None
    settlement_address: str | None = None
    sweep_transaction_hash: str | None = None
    swept_at: datetime | None = None
    wrong_network: list[WrongNetworkFunds] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)
    # in webhook payloads and events: the payment's id again
    payment_id: str | None = None
    # pricing in the merchant's currency, and refunds (served by newer APIs)
    currency: str | None = None
    rate_source: str | None = None
    rate_locked_until: datetime | None = None
    arrival_exchange_rate: Decimal | None = None  # funds after the lock were valued at it
    refunded_amount: Decimal | None = None
    refundable_amount: Decimal | None = None
