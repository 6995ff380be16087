"""API key authentication, scopes and the per-key rate limit.

The key is looked up with its merchant in one prepared statement on the request's
connection (the one a create then writes on), outside any transaction: it only reads.

``POST /payments`` authenticates from a per-process cache of keys that authenticated
(``KEY_CACHE_SECONDS``, at most ``KEY_CACHE_SIZE`` keys), saving that round trip on the
hot path: its scopes, mode and merchant may be up to ``KEY_CACHE_SECONDS`` old. Revocation
and a ban still take effect on the next request: the create's own read checks the key
again (``payments.create_payment``'s ``api_key_id``) before anything is written, and a
key it refuses leaves the cache; a create refused for anything else (a 4xx before or
instead of that read) looks the key up first, so a revoked key gets 401, not that answer.
Every other endpoint looks the key up each time. The rate limit counts every request
either way.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, NoReturn

from flask import g, request

from kassa_common.db import Prepared
from kassa_common.ids import hash_api_key, key_mode
from kassa_common.owner import Owner
from kassa_api.deps import connection, deps, make_owner
from kassa_api.errors import ApiError

KEY_LOOKUP = Prepared(
    "kassa_key_lookup",
    """
SELECT k.id, k.merchant_id, k.scopes, k.mode, k.revoked_at,
       m.activated, m.banned, m.business_name, m.payment_lifetime_minutes
FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
WHERE k.key_hash = %(key_hash)s
""",
    {"key_hash": "text"},
)


class StoredKey(NamedTuple):
    """A row of ``KEY_LOOKUP``."""

    id: uuid.UUID
    merchant_id: uuid.UUID
    scopes: list[str]
    mode: str
    revoked_at: datetime | None
    activated: bool
    banned: bool
    business_name: str | None
    payment_lifetime_minutes: int | None


@dataclass(frozen=True)
class Principal:
    key_id: uuid.UUID
    merchant_id: uuid.UUID
    test_mode: bool
    scopes: frozenset[str]
    owner: Owner


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": 'ApiKey header="X-Api-Key"'})


KEY_CACHE_SECONDS = 5.0
KEY_CACHE_SIZE = 10_000
# key hash: (the row, when it was read (monotonic)); only keys that authenticated
_cached: dict[str, tuple[StoredKey, float]] = {}


def _lookup(key_hash: str, cached: bool) -> tuple[StoredKey | None, bool]:
    """The key's row, and whether it came from the cache."""
    if cached and (hit := _cached.get(key_hash)) is not None and time.monotonic() - hit[1] < KEY_CACHE_SECONDS:
        return hit[0], True
    rows = KEY_LOOKUP(connection(), {"key_hash": key_hash})
    return (StoredKey._make(rows[0]) if rows else None), False


def recheck_key() -> None:
    """A request authenticated from the cache is being refused (a 4xx of its own): if its key
    no longer authenticates, drop it and answer 401 instead, as the lookup would have."""
    if g.get("key_from_cache"):
        raw = request.headers.get("X-Api-Key", "").strip()
        rows = KEY_LOOKUP(connection(), {"key_hash": hash_api_key(raw)})
        row = StoredKey._make(rows[0]) if rows else None
        if row is None or row.revoked_at is not None or row.banned or not row.activated or not row.business_name:
            forget_key()


def forget_key() -> NoReturn:
    """The request's key was refused after authenticating from the cache: drop it, and
    answer 401 as the lookup would have."""
    _cached.pop(hash_api_key(request.headers.get("X-Api-Key", "").strip()), None)
    raise _unauthorized("unknown or revoked API key")


def authenticate(scope: str, *, cached: bool = False) -> Principal:
    """Resolve X-Api-Key to a principal holding ``scope``, or raise 401/403/429.
    ``cached``: the key may come from the cache (only where the caller checks it again
    before it writes: ``POST /payments``)."""
    raw = request.headers.get("X-Api-Key", "").strip()
    if not raw:
        raise _unauthorized("missing X-Api-Key header")
    mode = key_mode(raw)
    if mode is None or len(raw) < 30:
        raise _unauthorized("malformed API key: keys start with kassa_live_ or kassa_test_")
    key_hash = hash_api_key(raw)
    row, from_cache = _lookup(key_hash, cached)
    if row is None or row.revoked_at is not None or row.mode != mode:
        raise _unauthorized("unknown or revoked API key")
    if row.banned:
        raise _unauthorized("this account is banned")
    if not row.activated or not row.business_name:
        raise _unauthorized("this account is not activated or has no merchant profile yet")
    if cached and not from_cache:
        if len(_cached) >= KEY_CACHE_SIZE:
            _cached.clear()
        _cached[key_hash] = (row, time.monotonic())
    principal = Principal(
        row.id,
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
    g.key_from_cache = from_cache
    return principal


def principal() -> Principal:
    return g.principal


def owner() -> Owner:
    """Whose objects this request may see: the key's merchant, in the key's mode."""
    return g.principal.owner
