"""POST /refunds/:id/complete: the merchant says which transaction paid a claimed refund;
Kassa checks it on the refund's network, under its RPC quorum, before completing it
(``refunds.payouts``).

400 when the transaction does not pay the refund (someone else, another token, too small,
before the claim, reverted, unknown, from the claimed address itself, a Kassa sweep, a
payment's deposit); 409 when it may but not now or not this refund (not yet confirmed, too
few nodes agree, already used for another refund, the refund not awaiting a payout) and
for a test-mode refund, which only a simulation completes; 503 when the network's node
does not answer. Scope refunds:manage."""

from __future__ import annotations

from typing import Annotated

from flask import Blueprint
from pydantic import ConfigDict, Field, StringConstraints

from kassa_common.fields import Strict
from kassa_common.refunds import onchain, payouts
from kassa_common.refunds.queries import find_refund
from kassa_common.refunds.shape import RefundOut, refund_out
from kassa_api.actors import api_actor
from kassa_api.auth import owner
from kassa_api.deps import db, deps, transaction
from kassa_api.endpoint import endpoint

bp = Blueprint("refund_payouts", __name__)


class CompleteRefund(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"transaction_hash": "0x" + "5e" * 32}]})
    transaction_hash: Annotated[str, StringConstraints(pattern=payouts.HASH_PATTERN)] = Field(
        description="the payout's transaction: its hash (0x and 64 hex digits) on EVM networks, its txid on Bitcoin",
        examples=["0x" + "5e" * 32],
    )


@bp.post("/refunds/<ref>/complete")
@endpoint(
    "Complete a claimed refund by the transaction that paid it (checked on chain)",
    scope="refunds:manage",
    tag="refunds",
    body=CompleteRefund,
    response=RefundOut,
    errors=(404, 409, 503),
)
def complete(ref: str, body: CompleteRefund):
    who, settings = owner(), deps().settings
    refund = find_refund(db(), who, ref)
    reader = None if refund.test_mode else onchain.reader_for(settings.networks.get(refund.network))
    try:
        with transaction() as session:
            done = payouts.complete_with_hash(session, who, refund.id, body.transaction_hash, reader, actor=api_actor())
            shown = refund_out(done, settings)
    finally:
        if reader is not None:
            reader.close()
    return shown
