"""A deep reorg of a payment's own funds (DESIGN §8): a confirmed transfer to the payment's
address lost in a reorg deeper than the required confirmations. The payment keeps its status
(``payments.settle``), but a refund made of those funds may now refund money the merchant
no longer has: its open refunds on that network (awaiting an address or a payout) are
flagged ``funds_reorged``, which the API, the ``refund.*`` events and the dashboard show.

The settler calls ``flag_funds_reorged`` in the transaction that records the loss, after
``payments.settle`` says it happened: the payment's row lock is held, so no refund of it is
made meanwhile. A refund made after the loss is made of what still stands and is not flagged;
the flag stays once set (mined again, the merchant still checks before paying).
"""

from __future__ import annotations

import logging
import uuid

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import Refund
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.refunds")
OPEN = (RefundStatus.AWAITING_ADDRESS, RefundStatus.AWAITING_PAYMENT)


def flag_funds_reorged(session: Session, payment_id: uuid.UUID, network: str) -> None:
    """Flag the payment's open refunds on ``network`` (the lost transfer's); those flagged are logged."""
    flagged = list(
        session.scalars(
            sa.update(Refund)
            .where(
                Refund.payment_id == payment_id,
                Refund.network == network.upper(),
                Refund.status.in_(OPEN),
                Refund.funds_reorged.is_(False),
            )
            .values(funds_reorged=True, updated_at=utcnow())
            .returning(Refund.id)
        )
    )
    if flagged:
        log.warning(
            "payment %s: funds on %s lost in a deep reorg; open refund(s) %s flagged funds_reorged",
            payment_id,
            network,
            ", ".join(map(str, flagged)),
        )
