"""``kassa.refunds``: refunds of a payment (DESIGN §8), paid by the merchant from their
own wallet once the customer has claimed them with an address. Scope ``refunds:manage``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kassa_client.encoding import to_decimal
from kassa_client.models.refunds import Refund
from kassa_client.resources.base import Resource, segment


class Refunds(Resource):
    def create(
        self,
        payment_id: str,
        *,
        amount: Decimal | int | float | str | None = None,
        reason: str | None = None,
        network: str | None = None,
        **extra: Any,
    ) -> Refund:
        """Refund part of a payment (``amount`` in its token's units) or, by default,
        everything refundable; the answer's ``claim_url`` goes to the customer."""
        body = {"amount": None if amount is None else to_decimal(amount), "reason": reason, "network": network, **extra}
        return self._object(
            Refund,
            "POST",
            f"/payments/{segment(payment_id)}/refunds",
            body={k: v for k, v in body.items() if v is not None},
        )

    def list(self, payment_id: str) -> list[Refund]:
        """Every refund of a payment."""
        return self._objects(Refund, "GET", f"/payments/{segment(payment_id)}/refunds")

    def get(self, refund_id: str) -> Refund:
        return self._object(Refund, "GET", f"/refunds/{segment(refund_id)}")

    def cancel(self, refund_id: str) -> Refund:
        """Cancel a refund not yet COMPLETED (``ConflictError`` afterwards)."""
        return self._object(Refund, "POST", f"/refunds/{segment(refund_id)}/cancel")

    def complete(self, refund_id: str, transaction_hash: str) -> Refund:
        """Complete a refund with the payout's transaction hash (checked on chain by Kassa)."""
        return self._object(
            Refund, "POST", f"/refunds/{segment(refund_id)}/complete", body={"transaction_hash": transaction_hash}
        )
