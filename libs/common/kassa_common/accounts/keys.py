"""API keys: create one (its secret shown once, only its hash kept), revoke, list; used by
the operator CLI and the dashboard. The API authenticates with them (``kassa_api.auth``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.accounts.merchants import MODES, AccountError
from kassa_common.errors import NotFound
from kassa_common.ids import hash_api_key, new_api_key
from kassa_common.models import ApiKey
from kassa_common.timefmt import utcnow

SCOPES = ("payments:create", "payments:read", "products:manage", "webhooks:manage", "refunds:manage")


@dataclass(frozen=True)
class NewKey:
    key: str  # shown once
    row: ApiKey


def create_key(
    session: Session,
    merchant_id: uuid.UUID,
    mode: str,
    scopes: list[str],
    name: str | None = None,
    *,
    actor: audit.Actor = audit.OPERATOR,
) -> NewKey:
    """A new key (audited as made by ``actor``: the dashboard passes its account; the
    operator's command and the tests' set-up are the operator)."""
    check_mode(mode)
    check_scopes(scopes)
    key = new_api_key(mode)
    row = ApiKey(
        id=uuid.uuid4(),
        merchant_id=merchant_id,
        mode=mode,
        name=name,
        prefix=key[:18] + "…",
        key_hash=hash_api_key(key),
        scopes=sorted(set(scopes)),
    )
    session.add(row)
    session.flush()
    named = f" “{name}”" if name else ""
    detail = f"{mode} key{named} {row.prefix}, scopes: {', '.join(row.scopes)}"
    audit.record(session, merchant_id, actor, "api_key.created", "api_key", row.id, detail)
    return NewKey(key, row)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise AccountError(f"mode must be one of {', '.join(MODES)}")
    return mode


def check_scopes(scopes: list[str]) -> list[str]:
    unknown = [s for s in scopes if s not in SCOPES]
    if not scopes:
        raise AccountError(f"choose at least one scope: {', '.join(SCOPES)}")
    if unknown:
        raise AccountError(f"unknown scopes {unknown}; choose from {', '.join(SCOPES)}")
    return scopes


def revoke_key(session: Session, merchant_id: uuid.UUID, key_id: uuid.UUID, *, actor: audit.Actor) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None or row.merchant_id != merchant_id:
        raise NotFound("API key not found")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        audit.record(session, merchant_id, actor, "api_key.revoked", "api_key", row.id, f"{row.mode} key {row.prefix}")
    return row


# ---- reads -----------------------------------------------------------------------------


def api_keys(session: Session, merchant_id: uuid.UUID) -> list[ApiKey]:
    """Every key of the merchant, of both modes and revoked ones too, newest first."""
    return list(
        session.scalars(sa.select(ApiKey).where(ApiKey.merchant_id == merchant_id).order_by(ApiKey.created_at.desc()))
    )
