"""A product: a priced item with a public share link."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from kassa_client.models.base import KassaObject


@dataclass(frozen=True, kw_only=True)
class Product(KassaObject):
    """``price`` is in USD (or ``currency``) for ``FIAT`` products and in token units for
    ``CRYPTO`` ones (then ``token`` and ``network`` are set); ``share_link`` is the public
    product page."""

    id: str
    name: str
    description: str | None = None
    price: Decimal
    currency_type: str
    token: str | None = None
    network: str | None = None
    active: bool
    share_link: str
    test_mode: bool
    created_at: datetime
    updated_at: datetime | None = None
    currency: str | None = None
