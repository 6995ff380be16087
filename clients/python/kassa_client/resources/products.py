"""``kassa.products``: create, get, list, iterate, update, delete."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from kassa_client.encoding import to_decimal
from kassa_client.models.products import Product
from kassa_client.pages import Page
from kassa_client.resources.base import (
    DEFAULT_PAGE_SIZE,
    ITERATE_PAGE_SIZE,
    UNSET,
    Resource,
    given,
    segment,
)

Price = Decimal | int | float | str


class Products(Resource):
    def create(
        self,
        *,
        name: str,
        price: Price,
        currency_type: str = "FIAT",
        currency: str | None = None,
        description: str | None = None,
        token: str | None = None,
        network: str | None = None,
        active: bool | None = None,
        **extra: Any,
    ) -> Product:
        """Create a product: ``price`` in ``currency`` (USD by default) for ``FIAT``, in token
        units for ``CRYPTO`` (then ``token`` and ``network`` are required)."""
        body = {
            "name": name,
            "price": to_decimal(price),
            "currency_type": currency_type,
            "currency": currency,
            "description": description,
            "token": token,
            "network": network,
            "active": active,
            **extra,
        }
        return self._object(Product, "POST", "/products", body={k: v for k, v in body.items() if v is not None})

    def get(self, product_id: str) -> Product:
        return self._object(Product, "GET", f"/products/{segment(product_id)}")

    def list(self, *, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> Page[Product]:
        """One page of products, newest first."""
        return self._page(Product, "/products", {}, page, page_size)

    def iterate(self, *, page_size: int = ITERATE_PAGE_SIZE) -> Iterator[Product]:
        """Every product, newest first, fetching pages as needed."""
        return self.list(page_size=page_size).auto_paging_iter()

    def update(
        self,
        product_id: str,
        *,
        name: str = UNSET,
        price: Price = UNSET,
        currency_type: str = UNSET,
        currency: str = UNSET,
        description: str | None = UNSET,
        token: str | None = UNSET,
        network: str | None = UNSET,
        active: bool = UNSET,
        **extra: Any,
    ) -> Product:
        """Change only the fields given (``description=None`` clears the description)."""
        body = given(
            name=name,
            price=price if price is UNSET else to_decimal(price),
            currency_type=currency_type,
            currency=currency,
            description=description,
            token=token,
            network=network,
            active=active,
            **extra,
        )
        return self._object(Product, "PATCH", f"/products/{segment(product_id)}", body=body)

    def delete(self, product_id: str) -> bool:
        """Delete a product (it is gone from get and list); True once deleted."""
        data = self._data("DELETE", f"/products/{segment(product_id)}")
        return isinstance(data, dict) and data.get("deleted") is True
