"""Password reset by email (DESIGN §10): a signed, expiring, single-use link.

Asking for a reset answers the same whether or not the email has an account (no
enumeration); when it has one (not banned), the merchant is emailed a link valid for
``LIFETIME``. The link's token is signed with SECRET_KEY and carries the merchant's id and
a fingerprint of its current password hash: setting a new password changes the hash, so
every link sent before dies with it (single use without a table of tokens). A successful
reset revokes every login of the merchant.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import sqlalchemy as sa
from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from kassa_common.accounts import merchants, notices
from kassa_common.models import Merchant

LIFETIME = timedelta(hours=1)
EVENT_TYPE = "account.password_reset"  # an internal row for the email (never published, not listed)
KIND = "password_reset"
_SALT = "kassa.password-reset"
TOKEN_MAX = 400  # longer is not one of ours


def _fingerprint(password_hash: str | None) -> str:
    return hashlib.sha256((password_hash or "").encode()).hexdigest()[:32]


def _signer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=_SALT)


def make_token(merchant: Merchant, secret_key: str) -> str:
    return str(_signer(secret_key).dumps({"m": str(merchant.id), "p": _fingerprint(merchant.password_hash)}))


def merchant_of(session: Session, token: str, secret_key: str, *, lock: bool = False) -> Merchant | None:
    """The merchant this token may reset, or None: forged, older than ``LIFETIME``, used
    (the password changed since), or the account is gone or banned. ``lock``: hold the
    merchant's row, so two submissions of one link cannot both succeed."""
    if not token or len(token) > TOKEN_MAX:
        return None
    try:
        data = _signer(secret_key).loads(token, max_age=int(LIFETIME.total_seconds()))
        merchant_id = uuid.UUID(data["m"])
        fingerprint = data["p"]
    except (BadData, KeyError, TypeError, ValueError):
        return None
    merchant = session.get(Merchant, merchant_id, with_for_update=lock)
    if merchant is None or merchant.banned or _fingerprint(merchant.password_hash) != fingerprint:
        return None
    return merchant


def request_reset(session: Session, email: str, *, secret_key: str, dashboard_url: str) -> bool:
    """Email a reset link to the account of ``email`` if there is one; whether one was written."""
    email = email.strip()[:320]
    if not email:
        return False
    merchant = session.scalar(sa.select(Merchant).where(sa.func.lower(Merchant.email) == email.lower()))
    if merchant is None or merchant.banned:
        return False
    link = f"{dashboard_url}/reset/{make_token(merchant, secret_key)}"
    minutes = int(LIFETIME.total_seconds() // 60)
    text = (
        "Someone (we hope you) asked to reset the password of your Kassa account.\n\n"
        f"Choose a new password here (the link works once, for {minutes} minutes):\n{link}\n\n"
        "Changing it signs out every browser logged in to your account.\n"
        "If you did not ask for this, ignore this email: your password stays as it is.\n"
    )
    notices.email_merchant(
        session,
        merchant.id,
        test_mode=False,
        event_type=EVENT_TYPE,
        kind=KIND,
        subject="Reset your Kassa password",
        text=text,
        payload={},
    )
    return True


def reset(merchant: Merchant, new: str, confirm: str) -> None:
    """Set the new password (the sign-up's rules); AccountError says why not. The caller revokes the logins."""
    if new != confirm:
        raise merchants.AccountError("the two passwords do not match")
    merchant.password_hash = merchants.hash_password(merchants.check_new_password(new))
