"""The Idempotency-Key of a create (POST /payments, POST /payments/:id/refunds), one way.

A key is the merchant's, per mode, and names what its first request made (a payment or a
refund). The first request claims it by writing its row in the transaction that makes the
object; a concurrent request with the same key waits on the unique key until that one
commits. Later, the same key with the same body (``request_hash``) answers what the first
request made; another body is a 409 (``REUSED``); a key whose object is not there yet is a
409 to retry (``IN_FLIGHT``). A key older than the TTL (``fresh_after``) is taken over by the
next request as if new.

A payment claims its key in the one statement that writes the payment and its event
(``payments.create``: that statement is its whole write, one round trip); a refund claims it
here (``claim_for_refund``) before the refund is made in the same transaction. Both hash,
compare and answer with what is below.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.errors import IdempotencyConflict
from kassa_common.models import IdempotencyKey, Refund
from kassa_common.owner import Owner

REUSED = "this Idempotency-Key was already used with a different request body"
# a payment's create, with a key that made a refund
USED_FOR_A_REFUND = "this Idempotency-Key was already used with a different request"
IN_FLIGHT = "a request with this Idempotency-Key is still in flight; retry it"
STATUS = 201  # what every create answers, stored with its key


def request_hash(body: Mapping[str, Any]) -> str:
    """The request as the key remembers it: SHA-256 of its canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def fresh_after(now: datetime, ttl: timedelta) -> datetime:
    """A key claimed before this has expired: the next request takes it over."""
    return now - ttl


def same_request(earlier_hash: str | None, digest: str | None) -> None:
    """The earlier request with the key had this body, or IdempotencyConflict (409)."""
    if earlier_hash != digest:
        raise IdempotencyConflict(REUSED)


def in_flight() -> IdempotencyConflict:
    """The earlier request with the key has not made its object yet (409: retry)."""
    return IdempotencyConflict(IN_FLIGHT)


def claim_for_refund(
    session: Session, owner: Owner, key: str, digest: str, refund_id: uuid.UUID, *, now: datetime, ttl: timedelta
) -> Refund | None:
    """Claim the key for a refund's create (None: claimed, go on and make ``refund_id``), or
    the refund an earlier request with the same key and body made (IdempotencyConflict:
    another body, or that request is still in flight). A concurrent request with the same
    key waits here for the first one's transaction."""
    stmt = pg_insert(IdempotencyKey).values(
        merchant_id=owner.merchant_id,
        test_mode=owner.test_mode,
        key=key,
        request_hash=digest,
        response_status=STATUS,
        refund_id=refund_id,
        created_at=now,
    )
    claim = stmt.on_conflict_do_update(
        index_elements=["merchant_id", "test_mode", "key"],
        set_={
            "request_hash": stmt.excluded.request_hash,
            "response_status": STATUS,
            "payment_id": None,
            "refund_id": stmt.excluded.refund_id,
            "created_at": stmt.excluded.created_at,
        },
        where=IdempotencyKey.created_at < fresh_after(now, ttl),
    ).returning(sa.literal(1))
    if session.execute(claim).first() is not None:
        return None
    earlier = session.execute(
        sa.select(IdempotencyKey.request_hash, IdempotencyKey.refund_id).where(
            IdempotencyKey.merchant_id == owner.merchant_id,
            IdempotencyKey.test_mode == owner.test_mode,
            IdempotencyKey.key == key,
        )
    ).first()
    if earlier is None:
        raise IdempotencyConflict(REUSED)
    same_request(earlier.request_hash, digest)
    refund = session.get(Refund, earlier.refund_id) if earlier.refund_id else None
    if refund is None:
        raise in_flight()
    return refund
