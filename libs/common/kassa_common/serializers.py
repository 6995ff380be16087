"""Public JSON shapes of products and webhook endpoints (the payment's is ``payments.shape``)."""
from __future__ import annotations

from typing import Any

from kassa_common.chains.rates import plain
from kassa_common.models import Product, WebhookEndpoint
from kassa_common.timefmt import iso
from kassa_common.urls import without_password


def product_to_dict(p: Product, share_link: str) -> dict[str, Any]:
    return {
        "id": str(p.id),
        "name": p.name,
        "description": p.description,
        "price": float(p.price) if p.currency_type == "FIAT" else plain(p.price),
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
        "url": without_password(w.url),  # the password is not shown again
        "events": list(w.events),
        "active": w.active,
        "description": w.description,
        "test_mode": w.test_mode,
        "created_at": iso(w.created_at),
        "updated_at": iso(w.updated_at),
    }
