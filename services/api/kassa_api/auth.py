"""API key authentication, scopes and the per-key rate limit.

The key is looked up with its merchant in one prepared statement on the request's
connection (the one a create then writes on), outside any transaction: it only reads.

The key's ``last_used_at`` is kept to the minute: the lookup also says whether the stored
value is older than ``LAST_USED_GRANULARITY`` seconds (by the database's clock), and only
then does an accepted key cost one more statement, a conditional UPDATE (which writes
nothing if another request just did). A key used all the time thus writes once a minute,
and a request with a key used within the minute runs the lookup alone.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from flask import g, request

from kassa_common.db import Prepared
from kassa_common.ids import hash_api_key, key_mode
from kassa_common.owner import Owner
from kassa_api.deps import connection, deps, make_owner
from kassa_api.errors import ApiError

LAST_USED_GRANULARITY = 60  # seconds: how stale a key's last_used_at may be before it is written again
KEY_LOOKUP = Prepared(
    "kassa_key_lookup",
    f"""
SELECT k.id, k.prefix, k.merchant_id, k.scopes, k.mode, k.revoked_at,
       m.activated, m.banned, m.business_name, m.payment_lifetime_minutes,
       k.last_used_at IS NULL OR k.last_used_at < now() - interval '{LAST_USED_GRANULARITY} seconds'
FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
WHERE k.key_hash = %(key_hash)s
""",
    {"key_hash": "text"},
)
KEY_USED = Prepared(
    "kassa_key_used",
    f"""
UPDATE api_keys SET last_used_at = now()
WHERE id = %(key_id)s
  AND (last_used_at IS NULL OR last_used_at < now() - interval '{LAST_USED_GRANULARITY} seconds')
""",
    {"key_id": "uuid"},
)


class StoredKey(NamedTuple):
    """A row of ``KEY_LOOKUP``."""

    id: uuid.UUID
    prefix: str
    merchant_id: uuid.UUID
    scopes: list[str]
    mode: str
    revoked_at: datetime | None
    activated: bool
    banned: bool
    business_name: str | None
    payment_lifetime_minutes: int | None
    use_stale: bool  # last_used_at is older than LAST_USED_GRANULARITY (or unset)


@dataclass(frozen=True)
class Principal:
    key_id: uuid.UUID
    key_prefix: str  # what the dashboard shows of the key (its audit rows name it so)
    merchant_id: uuid.UUID
    test_mode: bool
    scopes: frozenset[str]
    owner: Owner


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": 'ApiKey header="X-Api-Key"'})


def authenticate(scope: str) -> Principal:
    """Resolve X-Api-Key to a principal holding ``scope``, or raise 401/403/429."""
    raw = request.headers.get("X-Api-Key", "").strip()
    if not raw:
        raise _unauthorized("missing X-Api-Key header")
    mode = key_mode(raw)
    if mode is None or len(raw) < 30:
        raise _unauthorized("malformed API key: keys start with kassa_live_ or kassa_test_")
    rows = KEY_LOOKUP(connection(), {"key_hash": hash_api_key(raw)})
    row = StoredKey._make(rows[0]) if rows else None
    if row is None or row.revoked_at is not None or row.mode != mode:
        raise _unauthorized("unknown or revoked API key")
    if row.banned:
        raise _unauthorized("this account is banned")
    if not row.activated or not row.business_name:
        raise _unauthorized("this account is not activated or has no merchant profile yet")
    if row.use_stale:
        KEY_USED(connection(), {"key_id": str(row.id)})
    principal = Principal(
        row.id,
        row.prefix,
        row.merchant_id,
        mode == "test",
        frozenset(row.scopes),
        make_owner(row.merchant_id, mode == "test", row.payment_lifetime_minutes),
    )
    verdict = deps().limiter.hit(str(row.id))
    g.rate_limit = verdict
    if not verdict.allowed:
        raise ApiError(
            429,
            f"rate limit of {verdict.limit} requests per minute exceeded",
            headers={"Retry-After": str(verdict.reset_in)},
        )
    if scope not in principal.scopes:
        raise ApiError(403, f"this API key lacks the {scope} scope")
    g.principal = principal
    return principal


def principal() -> Principal:
    return g.principal


def owner() -> Owner:
    """Whose objects this request may see: the key's merchant, in the key's mode."""
    return g.principal.owner
