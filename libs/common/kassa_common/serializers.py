"""Public JSON shapes shared by the API and the webhook payloads."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from kassa_common.chains.rates import from_base_units
from kassa_common.models import Payment, Product, WebhookEndpoint
from kassa_common.timefmt import iso


def _usd(value: Decimal) -> float:
    return float(value.quantize(Decimal("0.01")))


def _plain(value: Decimal) -> str:
    """A decimal as a plain string: no exponent, no trailing zeros beyond the point."""
    return format(value.normalize(), "f")


def payment_to_dict(p: Payment) -> dict[str, Any]:
    return {
        "id": str(p.id),
        "short_id": p.short_id,
        "status": p.status,
        "amount": _usd(p.amount),
        "token": p.token,
        "network": p.network,
        "address": p.address,
        "crypto_amount": _plain(from_base_units(int(p.crypto_amount_units), p.decimals)),
        "amount_received": _plain(from_base_units(int(p.amount_received_units), p.decimals)),
        "exchange_rate": _plain(p.exchange_rate),
        "confirmations": p.confirmations,
        "required_confirmations": p.required_confirmations,
        "transaction_hash": p.transaction_hash,
        "checkout_url": p.checkout_url,
        "customer_email": p.customer_email,
        "customer_name": p.customer_name,
        "redirect_url": p.redirect_url,
        "cancel_url": p.cancel_url,
        "product_id": str(p.product_id) if p.product_id else None,
        "metadata": p.metadata_,
        "test_mode": p.test_mode,
        "expires_at": iso(p.expires_at),
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
        "completed_at": iso(p.completed_at),
    }


def product_to_dict(p: Product, share_link: str) -> dict[str, Any]:
    return {
        "id": str(p.id),
        "name": p.name,
        "description": p.description,
        "price": float(p.price) if p.currency_type == "FIAT" else _plain(p.price),
        "currency_type": p.currency_type,
        "token": p.token,
        "network": p.network,
        "active": p.active,
        "share_link": share_link,
        "test_mode": p.test_mode,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
    }


def webhook_to_dict(w: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": str(w.id),
        "url": w.url,
        "events": list(w.events),
        "active": w.active,
        "description": w.description,
        "test_mode": w.test_mode,
        "created_at": iso(w.created_at),
        "updated_at": iso(w.updated_at),
    }
