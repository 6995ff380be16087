"""The payment as the outside world sees it, defined once.

``PaymentOut`` is the payment object of the API and of every webhook's ``data``: the
serializer builds it (so a field cannot be served that the model does not declare, nor
declared and left out) and the OpenAPI document is generated from it. ``public_view`` is
the customer's view on the checkout page: no metadata, merchant or customer data.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, Optional

from pydantic import BaseModel

from kassa_common.chains.rates import plain, units_text
from kassa_common.messages import PaymentStatus
from kassa_common.models import Payment
from kassa_common.timefmt import iso

StatusName = Literal[tuple(s.value for s in PaymentStatus)]  # type: ignore[valid-type]


class PaymentOut(BaseModel):
    id: str
    short_id: str
    status: StatusName
    amount: float
    token: str
    network: str
    address: str
    crypto_amount: str
    amount_received: str
    exchange_rate: str
    confirmations: int
    required_confirmations: int
    transaction_hash: Optional[str]
    checkout_url: str
    customer_email: Optional[str]
    customer_name: Optional[str]
    redirect_url: Optional[str]
    cancel_url: Optional[str]
    product_id: Optional[str]
    metadata: dict[str, Any]
    test_mode: bool
    expires_at: str
    created_at: str
    updated_at: str
    completed_at: Optional[str]
    # Forwarder settlement (null in xpub mode, where ``address`` is in the merchant's own
    # wallet): where the deposit at ``address`` forwards to, and the latest sweep that moved
    # its funds there.
    settlement_address: Optional[str]
    sweep_transaction_hash: Optional[str]
    swept_at: Optional[str]


def usd(value: Decimal) -> float:
    return float(value.quantize(Decimal("0.01")))


def remaining_units(payment: Payment) -> int:
    """What the customer still has to send (never negative)."""
    return max(int(payment.crypto_amount_units) - int(payment.amount_received_units), 0)


def payment_to_dict(p: Payment) -> dict[str, Any]:
    return PaymentOut(
        id=str(p.id), short_id=p.short_id, status=p.status, amount=usd(p.amount), token=p.token,
        network=p.network, address=p.address, crypto_amount=units_text(p.crypto_amount_units, p.decimals),
        amount_received=units_text(p.amount_received_units, p.decimals), exchange_rate=plain(p.exchange_rate),
        confirmations=p.confirmations, required_confirmations=p.required_confirmations,
        transaction_hash=p.transaction_hash, checkout_url=p.checkout_url, customer_email=p.customer_email,
        customer_name=p.customer_name, redirect_url=p.redirect_url, cancel_url=p.cancel_url,
        product_id=str(p.product_id) if p.product_id else None, metadata=p.metadata_, test_mode=p.test_mode,
        expires_at=iso(p.expires_at), created_at=iso(p.created_at), updated_at=iso(p.updated_at),
        completed_at=iso(p.completed_at), settlement_address=p.settlement_address,
        sweep_transaction_hash=p.sweep_tx_hash, swept_at=iso(p.swept_at),
    ).model_dump()


def public_view(p: Payment, *, cancelable: bool) -> dict[str, Any]:
    """The status a customer may see: no metadata, merchant or customer data. ``cancelable``:
    whether the checkout offers its cancel link (``cancel.cancel_refusal``)."""
    return {
        "status": p.status,
        "amount": usd(p.amount),
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
    }
