"""Refunds (DESIGN §8): create and list a payment's, get one, cancel. Scope refunds:manage.

The refund logic is ``kassa_common.refunds``; this is the HTTP edge. The Idempotency-Key of a
create is ``kassa_common.idempotency``, as POST /payments': the same key and body answer the
first refund."""

from __future__ import annotations

import uuid
from datetime import timedelta

from flask import Blueprint

from kassa_common import idempotency
from kassa_common.payments.queries import find_payment
from kassa_common.refunds import transitions
from kassa_common.refunds.queries import find_refund, refunds_of
from kassa_common.refunds.shape import CreateRefund, RefundOut, refund_out
from kassa_common.timefmt import utcnow
from kassa_api.actors import api_actor
from kassa_api.auth import owner
from kassa_api.deps import db, deps, release_connection, transaction
from kassa_api.endpoint import endpoint, idempotency_key

bp = Blueprint("refunds", __name__)
SCOPE = "refunds:manage"


def _request_hash(ref: str, body: CreateRefund) -> str:
    """The create as its Idempotency-Key remembers it: the payment and the fields (as text)."""
    shown = {k: (str(v) if v is not None else None) for k, v in body.model_dump().items()}
    return idempotency.request_hash({"refund_of": ref, **shown})


@bp.post("/payments/<ref>/refunds")
@endpoint(
    "Refund a payment (the customer claims it, the merchant pays it)",
    scope=SCOPE,
    tag="refunds",
    body=CreateRefund,
    response=RefundOut,
    status=201,
    errors=(404, 409, 422),
    body_required=False,
)
def create_refund(ref: str, body: CreateRefund):
    key, s, who = idempotency_key(), deps().settings, owner()
    refund_id = uuid.uuid4()
    release_connection()  # the payment's row lock may keep this request waiting
    with transaction() as session:
        if key is not None:
            earlier = idempotency.claim_for_refund(
                session,
                who,
                key,
                _request_hash(ref, body),
                refund_id,
                now=utcnow(),
                ttl=timedelta(hours=s.idempotency_ttl_hours),
            )
            if earlier is not None:
                return refund_out(earlier, s), 201, {"Idempotent-Replayed": "true"}
        refund = transitions.create_refund(
            session,
            who,
            ref,
            body.amount,
            body.reason or None,
            network=body.network,
            claim_days=s.refund_claim_days,
            refund_id=refund_id,
            actor=api_actor(),
        )
        shown = refund_out(refund, s)
    return shown, 201


@bp.get("/payments/<ref>/refunds")
@endpoint(
    "List a payment's refunds, newest first",
    scope=SCOPE,
    tag="refunds",
    response=list[RefundOut],
    errors=(404,),
)
def list_refunds(ref: str):
    session = db()
    payment = find_payment(session, owner(), ref)
    return [refund_out(r, deps().settings) for r in refunds_of(session, payment.id)]


@bp.get("/refunds/<ref>")
@endpoint("Get a refund", scope=SCOPE, tag="refunds", response=RefundOut, errors=(404,))
def get_refund(ref: str):
    return refund_out(find_refund(db(), owner(), ref), deps().settings)


@bp.post("/refunds/<ref>/cancel")
@endpoint(
    "Cancel a refund (any time before it is completed)",
    scope=SCOPE,
    tag="refunds",
    response=RefundOut,
    errors=(404, 409),
)
def cancel_refund(ref: str):
    release_connection()
    with transaction() as session:
        refund = transitions.cancel_refund(session, owner(), ref, actor=api_actor())
        shown = refund_out(refund, deps().settings)
    return shown
