"""``kassa.refunds``: refunds of a payment (DESIGN §8), paid by the merchant from their
own wallet once the customer has claimed them with an address. Scope ``refunds:manage``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kassa_client.encoding import to_decimal
from kassa_client.models.refunds import Refund
from kassa_client.resources.base import Resource, new_idempotency_key, segment


class Refunds(Resource):
    def create(
        self,
        payment_id: str,
        *,
        amount: Decimal | int | float | str | None = None,
        reason: str | None = None,
        network: str | None = None,
        idempotency_key: str | None = None,
        **extra: Any,
    ) -> Refund:
        """Refund part of a payment (``amount`` in its token's units, at most its decimals) or,
        by default, everything refundable; ``network``: refund funds that arrived on another
        network there. The answer's ``claim_url`` goes to the customer (Kassa emails it when
        the payment has a ``customer_email``). A retried create sends the same
        Idempotency-Key (one is made when none is given), so it never refunds twice."""
        body = {"amount": None if amount is None else to_decimal(amount), "reason": reason, "network": network, **extra}
        key = idempotency_key if idempotency_key is not None else new_idempotency_key()
        return self._object(
            Refund,
            "POST",
            f"/payments/{segment(payment_id)}/refunds",
            body={k: v for k, v in body.items() if v is not None},
            idempotency_key=key,
        )

    def list(self, payment_id: str) -> list[Refund]:
        """Every refund of a payment, newest first."""
        return self._objects(Refund, "GET", f"/payments/{segment(payment_id)}/refunds")

    def get(self, refund_id: str) -> Refund:
        return self._object(Refund, "GET", f"/refunds/{segment(refund_id)}")

    def cancel(self, refund_id: str) -> Refund:
        """Cancel a refund whose payout is not yet seen (``ConflictError`` once a payout is seen on
        chain, and once COMPLETED, CANCELED or EXPIRED)."""
        return self._object(Refund, "POST", f"/refunds/{segment(refund_id)}/cancel")

    def complete(self, refund_id: str, transaction_hash: str) -> Refund:
        """Complete a live refund with the payout's transaction hash (checked on chain by Kassa,
        under the network's RPC quorum; ``ConflictError`` for a test refund, which only a
        simulation completes)."""
        return self._object(
            Refund, "POST", f"/refunds/{segment(refund_id)}/complete", body={"transaction_hash": transaction_hash}
        )
