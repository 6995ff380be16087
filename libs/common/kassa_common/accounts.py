"""Merchant accounts, API keys and wallets: used by the operator CLI and the dashboard."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import NamedTuple

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.chains import forwarder
from kassa_common.chains.hd import validate_xpub
from kassa_common.chains.live_keys import live_key_warning
from kassa_common.errors import DomainError, NotFound
from kassa_common.ids import hash_api_key, new_api_key
from kassa_common.models import ApiKey, Merchant, Wallet
from kassa_common.timefmt import utcnow

SCOPES = ("payments:create", "payments:read", "products:manage", "webhooks:manage")
MODES = ("test", "live")
CHAINS = ("evm", "bitcoin")
_hasher = PasswordHasher()  # argon2id, memory-hard


class AccountError(DomainError):
    code = "VALIDATION_ERROR"


def hash_password(password: str) -> str:
    if len(password) < 8:
        raise AccountError("passwords need at least 8 characters")
    return _hasher.hash(password)


def check_password(stored: str | None, password: str) -> bool:
    if not stored:
        return False
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, InvalidHashError):
        return False


def merchant_by_email(session: Session, email: str) -> Merchant:
    merchant = session.scalar(sa.select(Merchant).where(sa.func.lower(Merchant.email) == email.strip().lower()))
    if merchant is None:
        raise NotFound(f"no merchant with email {email}")
    return merchant


def create_merchant(session: Session, email: str, password: str | None, business_name: str | None,
                    activate: bool = False) -> Merchant:
    email = email.strip()
    if "@" not in email:
        raise AccountError(f"not an email address: {email}")
    exists = session.scalar(sa.select(Merchant.id).where(sa.func.lower(Merchant.email) == email.lower()))
    if exists:
        raise AccountError(f"a merchant with email {email} already exists")
    merchant = Merchant(id=uuid.uuid4(), email=email, password_hash=hash_password(password) if password else None,
                        business_name=(business_name or "").strip() or None, activated=activate)
    session.add(merchant)
    session.flush()
    return merchant


@dataclass(frozen=True)
class NewKey:
    key: str  # shown once
    row: ApiKey


def create_key(session: Session, merchant_id: uuid.UUID, mode: str, scopes: list[str], name: str | None = None) -> NewKey:
    if mode not in MODES:
        raise AccountError(f"mode must be one of {', '.join(MODES)}")
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise AccountError(f"unknown scopes {unknown}; choose from {', '.join(SCOPES)}")
    key = new_api_key(mode)
    row = ApiKey(id=uuid.uuid4(), merchant_id=merchant_id, mode=mode, name=name, prefix=key[:18] + "…",
                 key_hash=hash_api_key(key), scopes=sorted(set(scopes)))
    session.add(row)
    session.flush()
    return NewKey(key, row)


def revoke_key(session: Session, merchant_id: uuid.UUID, key_id: uuid.UUID) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None or row.merchant_id != merchant_id:
        raise NotFound("API key not found")
    row.revoked_at = row.revoked_at or utcnow()
    return row


class SavedWallet(NamedTuple):
    xpub: str
    warning: str | None  # shown to whoever set it (a published test key in development)


def set_wallet(session: Session, merchant_id: uuid.UUID, mode: str, chain: str, xpub: str, *,
               allow_test_keys: bool = False) -> SavedWallet:
    """Set the merchant's key for ``chain`` in ``mode``. Live mode takes only mainnet keys
    that are not published test keys (``allow_test_keys``: with a warning, for development)."""
    if mode not in MODES or chain not in CHAINS:
        raise AccountError("mode must be test|live and chain evm|bitcoin")
    try:
        xpub = validate_xpub(chain, xpub)
        warning = live_key_warning(chain, xpub, allow_test_keys=allow_test_keys) if mode == "live" else None
    except ValueError as exc:
        raise AccountError(str(exc)) from None
    _upsert_wallet(session, merchant_id, mode, chain, xpub=xpub)
    return SavedWallet(xpub, warning)


def set_settlement_address(session: Session, merchant_id: uuid.UUID, mode: str, address: str) -> str:
    """Forwarder settlement for EVM: each payment gets a deposit address that can only
    forward to ``address`` (replaces an extended public key set for EVM in that mode)."""
    if mode not in MODES:
        raise AccountError("mode must be test|live")
    try:
        address = forwarder.settlement_address(address)
    except ValueError as exc:
        raise AccountError(str(exc)) from None
    _upsert_wallet(session, merchant_id, mode, "evm", settlement_address=address)
    return address


def _upsert_wallet(session: Session, merchant_id: uuid.UUID, mode: str, chain: str, *, xpub: str | None = None,
                   settlement_address: str | None = None) -> None:
    """A chain's wallet is one thing at a time: the key or the settlement address."""
    now = utcnow()
    values = {"xpub": xpub, "settlement_address": settlement_address, "updated_at": now}
    session.execute(
        pg_insert(Wallet).values(id=uuid.uuid4(), merchant_id=merchant_id, mode=mode, chain=chain, created_at=now,
                                 **values)
        .on_conflict_do_update(index_elements=["merchant_id", "mode", "chain"], set_=values)
    )
