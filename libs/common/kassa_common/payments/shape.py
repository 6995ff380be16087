"""The payment as the outside world sees it, defined once.

``PaymentOut`` is the payment object of the API and of every webhook's ``data``, and the
OpenAPI document is generated from it. ``payment_to_dict`` builds that object as a plain dict
(validating it through the model would add half again to its cost, which shows in a batch of
thousands); the unit tests hold it to exactly what validating through ``PaymentOut`` gives,
so a field cannot be served that the model does not declare, nor declared and left out.
The expirer builds the same object in SQL for an expired payment without transfers
(``payments.expire.EXPIRED_OBJECT``); its integration tests hold it to ``payment_to_dict``.
``public_view`` is the customer's view on the checkout page: no metadata, merchant or
customer data.

Shaping reads nothing from the database: the caller brings the payment's transfers and
refund totals (``payments.queries`` and ``payments.refunded`` read them, and ``queries.payment_object`` reads what a
caller does not have, then shapes).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, Field

from kassa_common.chains.networks import shipped
from kassa_common.models import Payment
from kassa_common.payments import refunded as refund_amounts
from kassa_common.payments.refunded import RefundTotals
from kassa_common.pricing.amounts import plain, units_text
from kassa_common.statuses import PaymentStatus, TransferStatus
from kassa_common.timefmt import iso

StatusName = Literal["PENDING", "COMPLETED", "PARTIALLY_PAID", "EXPIRED", "CANCELED"]
TransferStatusName = Literal["SEEN", "CONFIRMED", "ORPHANED", "REORGED"]
if set(get_args(StatusName)) != set(PaymentStatus) or set(get_args(TransferStatusName)) != set(TransferStatus):
    raise RuntimeError("StatusName and TransferStatusName must list the statuses of messages.py")


class TransferOut(BaseModel):
    """A transfer to the payment's address, counted or not."""

    network: str
    token: str
    tx_hash: str
    log_index: int = Field(
        description="the ERC-20 log's index in its block, -1 for a native EVM transfer, the output index for Bitcoin"
    )
    amount: str = Field(description="decimal string in token units")
    confirmations: int
    status: TransferStatusName
    counted: bool = Field(description="counts toward amount_received (once CONFIRMED)")
    reason: str | None = Field(description="why it does not count; null when it does")
    late: bool = Field(description="arrived after the payment was EXPIRED or CANCELED")
    created_at: str


class WrongNetworkFunds(BaseModel):
    """A supported token that reached the payment's address on another EVM network: not
    counted toward the payment, and recoverable. ``recovery``: ``sweep`` (forwarder
    settlement: the sweeper moves it on that network to ``settlement_address``) or
    ``wallet`` (xpub: the address is the merchant's own on every EVM network)."""

    network: str
    token: str
    amount: str
    transaction_hash: str
    log_index: int
    recovery: Literal["sweep", "wallet"]


class PaymentOut(BaseModel):
    id: str
    short_id: str
    status: StatusName
    amount: float = Field(description="in ``currency``, at its minor units")
    currency: str = Field(description="ISO 4217 code of ``amount``")
    token: str
    network: str
    address: str
    crypto_amount: str
    amount_received: str
    refunded_amount: str = Field(description="decimal string in the token: the refunds completed (every network)")
    refundable_amount: str = Field(
        description="decimal string in the token: confirmed funds received (late and wrong-network ones included) "
        "less the refunds not canceled or expired"
    )
    exchange_rate: str = Field(description="price of one token in ``currency`` (the merchant's spread included)")
    rate_source: str | None = Field(description="where the rate came from and how the sources were combined")
    rate_locked_until: str = Field(
        description="the quoted crypto amount holds until then; funds arriving later "
        "are valued at the rate of their arrival, and funds confirmed long after it "
        "(RATE_HOLD_GRACE_MINUTES) at the rate of their confirmation"
    )
    arrival_exchange_rate: str | None = Field(
        description="the rate funds arriving after the lock, or confirmed after their rate's hold, were valued "
        "at (the latest); null when none were"
    )
    confirmations: int
    required_confirmations: int
    transaction_hash: str | None
    checkout_url: str
    customer_email: str | None
    customer_name: str | None
    redirect_url: str | None
    cancel_url: str | None
    product_id: str | None
    metadata: dict[str, Any]
    test_mode: bool
    expires_at: str
    created_at: str
    updated_at: str
    completed_at: str | None
    # Forwarder settlement (null in xpub mode, where ``address`` is in the merchant's own
    # wallet): where the deposit at ``address`` forwards to, and the latest sweep that moved
    # its funds there.
    settlement_address: str | None
    sweep_transaction_hash: str | None
    swept_at: str | None
    # Funds that reached ``address`` on another EVM network (``payment.wrong_network``).
    wrong_network: list[WrongNetworkFunds]
    transfers: list[TransferOut] = Field(description="every transfer to the payment's address, oldest first")


def usd(value: Decimal) -> float:
    return float(value.quantize(Decimal("0.01")))


def remaining_units(payment: Payment) -> int:
    """What the customer still has to send (never negative)."""
    return max(int(payment.crypto_amount_units) - int(payment.amount_received_units), 0)


# A payment as a plain row: what ``payment_to_dict`` reads of a payment, and its merchant (an
# expired batch as the UPDATE returns it, a new payment before it is written). Its fields are
# ``Payment``'s attribute names, and ``queries.PAYMENT_COLUMNS`` is read from them. Shaping
# it costs half what shaping a ``Payment`` or a SQLAlchemy ``Row`` does (reading fields by
# name is most of the difference).
class PaymentRow(NamedTuple):
    id: uuid.UUID
    merchant_id: uuid.UUID
    short_id: str
    status: str
    amount: Decimal
    token: str
    network: str
    decimals: int
    address: str
    crypto_amount_units: Decimal | int
    amount_received_units: Decimal | int
    exchange_rate: Decimal
    currency: str
    rate_source: str | None
    rate_locked_until: datetime | None
    arrival_exchange_rate: Decimal | None
    confirmations: int
    required_confirmations: int
    transaction_hash: str | None
    checkout_url: str
    customer_email: str | None
    customer_name: str | None
    redirect_url: str | None
    cancel_url: str | None
    product_id: uuid.UUID | None
    metadata_: dict[str, Any]
    test_mode: bool
    expires_at: datetime
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    settlement_address: str | None
    sweep_tx_hash: str | None
    swept_at: datetime | None
    wrong_network: list[dict[str, Any]]


def _decimals(p: Payment, network: str, token: str) -> int | None:
    if (network, token) == (p.network, p.token):
        return p.decimals
    net = shipped().get(network)  # decimals are data of the token, whatever the settings
    found = net.token(token) if net else None
    return found.decimals if found else None


def _not_counted_because(p: Payment, t: Any) -> str | None:
    if t.network != p.network:
        return f"sent on {t.network}, not on the payment's network {p.network}"
    if t.token != p.token:
        return f"{t.token} is not the payment's token {p.token}"
    if t.status == TransferStatus.ORPHANED:
        return "dropped: its block left the chain (reorganisation) or it left the mempool"
    if t.status == TransferStatus.REORGED:
        return (
            "lost: it was confirmed, then its block left the chain in a reorganisation deeper than the "
            "required confirmations (counted again if it is mined again)"
        )
    return None


@lru_cache(maxsize=4096)
def _units_text(units: int, decimals: int) -> str:
    """``units_text``, remembered: a batch repeats few amounts (nothing received yet, the
    same price in a stablecoin), and formatting one digit by digit costs more than any other field."""
    return units_text(units, decimals)


def transfer_to_dict(p: Any, t: Any) -> dict[str, Any]:
    """One transfer as ``TransferOut`` (its fields, in its order)."""
    decimals = _decimals(p, t.network, t.token)
    reason = _not_counted_because(p, t)
    return {
        "network": t.network,
        "token": t.token,
        "tx_hash": t.tx_hash,
        "log_index": t.log_index,
        "amount": units_text(t.amount_units, decimals) if decimals is not None else str(int(t.amount_units)),
        "confirmations": t.confirmations,
        "status": str(t.status),
        "counted": reason is None,
        "reason": reason,
        "late": t.late,
        "created_at": iso(t.created_at),
    }


def _json_copy(value: Any) -> Any:
    """A copy of a JSON value (the caller may change the object without changing the payment)."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    return value


_WRONG_NETWORK_FIELDS = tuple(WrongNetworkFunds.model_fields)


def payment_to_dict(p: Any, transfers: list[Any], refunds: RefundTotals) -> dict[str, Any]:
    """The payment object: ``PaymentOut``'s fields in its order, built directly (the tests hold
    it to what validating through the model gives, byte for byte). ``p``: a ``Payment`` or a
    ``PaymentRow``. ``transfers``: its rows (``kassa_common.transfers.transfers_of``; a new payment's ``[]``),
    oldest first. ``refunds``: its totals (``refunded.refund_totals``; ``NONE`` when it
    has none). Nothing is read here: ``queries.payment_object`` reads what the caller does
    not have, then shapes."""
    refunded, refundable = refund_amounts.shown(p, transfers, refunds)
    decimals = p.decimals
    return {
        "id": str(p.id),
        "short_id": p.short_id,
        "status": str(p.status),
        "amount": usd(p.amount),
        "currency": p.currency,
        "token": p.token,
        "network": p.network,
        "address": p.address,
        "crypto_amount": _units_text(int(p.crypto_amount_units), decimals),
        "amount_received": _units_text(int(p.amount_received_units), decimals),
        "refunded_amount": refunded,
        "refundable_amount": refundable,
        "exchange_rate": plain(p.exchange_rate),
        "rate_source": p.rate_source,
        "rate_locked_until": iso(p.rate_locked_until or p.expires_at),
        "arrival_exchange_rate": plain(p.arrival_exchange_rate) if p.arrival_exchange_rate is not None else None,
        "confirmations": p.confirmations,
        "required_confirmations": p.required_confirmations,
        "transaction_hash": p.transaction_hash,
        "checkout_url": p.checkout_url,
        "customer_email": p.customer_email,
        "customer_name": p.customer_name,
        "redirect_url": p.redirect_url,
        "cancel_url": p.cancel_url,
        "product_id": str(p.product_id) if p.product_id else None,
        "metadata": _json_copy(p.metadata_),
        "test_mode": p.test_mode,
        "expires_at": iso(p.expires_at),
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
        "completed_at": iso(p.completed_at),
        "settlement_address": p.settlement_address,
        "sweep_transaction_hash": p.sweep_tx_hash,
        "swept_at": iso(p.swept_at),
        "wrong_network": [{k: w[k] for k in _WRONG_NETWORK_FIELDS} for w in p.wrong_network or ()],
        "transfers": [transfer_to_dict(p, t) for t in transfers],
    }


def public_view(p: Payment, *, cancelable: bool) -> dict[str, Any]:
    """The status a customer may see: no metadata, merchant or customer data. ``cancelable``:
    whether the checkout offers its cancel link (``cancel.cancel_refusal``)."""
    return {
        "status": p.status,
        "amount": usd(p.amount),
        "currency": p.currency,
        "token": p.token,
        "network": p.network,
        "crypto_amount": units_text(p.crypto_amount_units, p.decimals),
        "amount_received": units_text(p.amount_received_units, p.decimals),
        "amount_remaining": units_text(remaining_units(p), p.decimals),
        "confirmations": p.confirmations,
        "required_confirmations": p.required_confirmations,
        "seen": p.status == PaymentStatus.PENDING and bool(p.transaction_hash),
        "expires_at": iso(p.expires_at),
        "redirect_url": p.redirect_url if p.status == PaymentStatus.COMPLETED else None,
        "test_mode": p.test_mode,
        "cancelable": cancelable,
        # what reached this address on another network: the checkout says it is recoverable
        "wrong_network": [
            {"network": w["network"], "token": w["token"], "amount": w["amount"]} for w in p.wrong_network or []
        ],
    }
