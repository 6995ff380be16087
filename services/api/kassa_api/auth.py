"""API key authentication, scopes and the per-key rate limit."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from flask import g, request

from kassa_common.ids import hash_api_key, key_mode
from kassa_common.models import ApiKey, Merchant
from kassa_common.owner import Owner
from kassa_api.deps import db, deps, make_owner
from kassa_api.errors import ApiError


@dataclass(frozen=True)
class Principal:
    key_id: uuid.UUID
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
    row = db().execute(
        sa.select(ApiKey.id, ApiKey.merchant_id, ApiKey.scopes, ApiKey.mode, ApiKey.revoked_at,
                  Merchant.activated, Merchant.banned, Merchant.business_name,
                  Merchant.payment_lifetime_minutes)
        .join(Merchant, Merchant.id == ApiKey.merchant_id)
        .where(ApiKey.key_hash == hash_api_key(raw))
    ).first()
    if row is None or row.revoked_at is not None or row.mode != mode:
        raise _unauthorized("unknown or revoked API key")
    if row.banned:
        raise _unauthorized("this account is banned")
    if not row.activated or not row.business_name:
        raise _unauthorized("this account is not activated or has no merchant profile yet")
    principal = Principal(row.id, row.merchant_id, mode == "test", frozenset(row.scopes),
                          make_owner(row.merchant_id, mode == "test", row.payment_lifetime_minutes))
    verdict = deps().limiter.hit(str(row.id))
    g.rate_limit = verdict
    if not verdict.allowed:
        raise ApiError(429, f"rate limit of {verdict.limit} requests per minute exceeded",
                       headers={"Retry-After": str(verdict.reset_in)})
    if scope not in principal.scopes:
        raise ApiError(403, f"this API key lacks the {scope} scope")
    g.principal = principal
    return principal


def principal() -> Principal:
    return g.principal


def owner() -> Owner:
    """Whose objects this request may see: the key's merchant, in the key's mode."""
    return g.principal.owner
