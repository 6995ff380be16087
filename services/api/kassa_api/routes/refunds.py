"""Refunds (DESIGN §8): create and list a payment's, get one, cancel. Scope refunds:manage.

The refund logic is ``kassa_common.refunds``; this is the HTTP edge (and the Idempotency-Key
of a create, kept like POST /payments': the same key and body answer the first refund)."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

import sqlalchemy as sa
from flask import Blueprint
from sqlalchemy.dialects.postgresql import insert as pg_insert

from kassa_common.errors import IdempotencyConflict
from kassa_common.models import IdempotencyKey, Refund
from kassa_common.owner import Owner
from kassa_common.payments.queries import find_payment
from kassa_common.refunds import transitions
from kassa_common.refunds.queries import find_refund, refunds_of
from kassa_common.refunds.shape import CreateRefund, RefundOut, refund_out
from kassa_common.timefmt import utcnow
from kassa_api.auth import owner
from kassa_api.deps import db, deps, release_connection, transaction
from kassa_api.endpoint import endpoint
from kassa_api.routes.payments import idempotency_key

bp = Blueprint("refunds", __name__)
SCOPE = "refunds:manage"


def _request_hash(ref: str, body: CreateRefund) -> str:
    shown = {k: (str(v) if v is not None else None) for k, v in body.model_dump().items()}
    raw = json.dumps({"refund_of": ref, **shown}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


def _claim_key(session, who: Owner, key: str, digest: str, refund_id: uuid.UUID) -> Refund | None:
    """Claim the Idempotency-Key for this request (None: claimed, go on), or the refund an
    earlier request with the same key and body made (IdempotencyConflict: another body, or
    that request is still in flight). A concurrent request with the same key waits here for
    the first one's transaction."""
    now = utcnow()
    fresh_after = now - timedelta(hours=deps().settings.idempotency_ttl_hours)
    stmt = pg_insert(IdempotencyKey).values(
        merchant_id=who.merchant_id,
        test_mode=who.test_mode,
        key=key,
        request_hash=digest,
        response_status=201,
        refund_id=refund_id,
        created_at=now,
    )
    claim = stmt.on_conflict_do_update(
        index_elements=["merchant_id", "test_mode", "key"],
        set_={
            "request_hash": stmt.excluded.request_hash,
            "response_status": 201,
            "payment_id": None,
            "refund_id": stmt.excluded.refund_id,
            "created_at": stmt.excluded.created_at,
        },
        where=IdempotencyKey.created_at < fresh_after,
    ).returning(sa.literal(1))
    if session.execute(claim).first() is not None:
        return None
    earlier = session.execute(
        sa.select(IdempotencyKey.request_hash, IdempotencyKey.refund_id).where(
            IdempotencyKey.merchant_id == who.merchant_id,
            IdempotencyKey.test_mode == who.test_mode,
            IdempotencyKey.key == key,
        )
    ).first()
    if earlier is None or earlier.request_hash != digest:
        raise IdempotencyConflict("this Idempotency-Key was already used with a different request body")
    refund = session.get(Refund, earlier.refund_id) if earlier.refund_id else None
    if refund is None:
        raise IdempotencyConflict("a request with this Idempotency-Key is still in flight; retry it")
    return refund


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
            earlier = _claim_key(session, who, key, _request_hash(ref, body), refund_id)
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
        refund = transitions.cancel_refund(session, owner(), ref)
        shown = refund_out(refund, deps().settings)
    return shown
