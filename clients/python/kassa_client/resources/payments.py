"""``kassa.payments``: create, get, list, iterate, cancel."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from kassa_client.encoding import to_decimal
from kassa_client.models.payments import Payment
from kassa_client.pages import Page
from kassa_client.resources.base import (
    DEFAULT_PAGE_SIZE,
    ITERATE_PAGE_SIZE,
    Resource,
    new_idempotency_key,
    segment,
)

Amount = Decimal | int | float | str


class Payments(Resource):
    def create(
        self,
        *,
        token: str,
        network: str,
        amount: Amount | None = None,
        product_id: str | None = None,
        currency: str | None = None,
        customer_email: str | None = None,
        customer_name: str | None = None,
        redirect_url: str | None = None,
        cancel_url: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **extra: Any,
    ) -> Payment:
        """Create a payment (``amount``, or ``product_id`` to charge for a product) and
        return it with its ``checkout_url``.

        Every create carries an ``Idempotency-Key``: yours (an order id makes a retry
        after a crash safe too) or a new random one, kept across the client's own
        retries, so a create is never doubled by a retry. ``extra``: fields this client
        does not name yet, sent as given."""
        body: dict[str, Any] = {
            "amount": None if amount is None else to_decimal(amount),
            "product_id": product_id,
            "token": token,
            "network": network,
            "currency": currency,
            "customer_email": customer_email,
            "customer_name": customer_name,
            "redirect_url": redirect_url,
            "cancel_url": cancel_url,
            "metadata": None if metadata is None else dict(metadata),
            **extra,
        }
        key = idempotency_key if idempotency_key is not None else new_idempotency_key()
        return self._object(
            Payment, "POST", "/payments", body={k: v for k, v in body.items() if v is not None}, idempotency_key=key
        )

    def get(self, payment_id: str) -> Payment:
        """A payment by its id or its short id."""
        return self._object(Payment, "GET", f"/payments/{segment(payment_id)}")

    def list(
        self, *, status: str | None = None, search: str | None = None, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Page[Payment]:
        """One page of payments, newest first; ``search`` matches the customer's email and
        name (case-insensitive substring) and ids exactly."""
        return self._page(Payment, "/payments", {"status": status, "search": search}, page, page_size)

    def iterate(
        self, *, status: str | None = None, search: str | None = None, page_size: int = ITERATE_PAGE_SIZE
    ) -> Iterator[Payment]:
        """Every payment matching the filters, newest first, fetching pages as needed."""
        return self.list(status=status, search=search, page_size=page_size).auto_paging_iter()

    def cancel(self, payment_id: str) -> Payment:
        """Cancel a PENDING payment (``ConflictError`` otherwise); returns it CANCELED."""
        return self._object(Payment, "POST", f"/payments/{segment(payment_id)}/cancel")
