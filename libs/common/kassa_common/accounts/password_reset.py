"""Password reset by email (DESIGN §10): a signed, expiring, single-use link.

Asking for a reset answers the same whether or not the email has an account (no
enumeration); when it has one (with a store that is not banned), the account is emailed a
link valid for ``LIFETIME``. The link's token is signed with SECRET_KEY and carries the
account's id and a fingerprint of its current password hash: setting a new password changes
the hash, so every link sent before dies with it (single use without a table of tokens). A
successful reset revokes every login of the account.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.accounts import merchants, notices, stores
from kassa_common.models import Account, Merchant

LIFETIME = timedelta(hours=1)
EVENT_TYPE = "account.password_reset"  # an internal row for the email (never published, not listed)
KIND = "password_reset"
_SALT = "kassa.password-reset"
TOKEN_MAX = 400  # longer is not one of ours


def _fingerprint(password_hash: str | None) -> str:
    return hashlib.sha256((password_hash or "").encode()).hexdigest()[:32]


def _signer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=_SALT)


def make_token(account: Account, secret_key: str) -> str:
    return str(_signer(secret_key).dumps({"m": str(account.id), "p": _fingerprint(account.password_hash)}))


def _shut_out(session: Session, account: Account) -> bool:
    """An account whose every store is banned (or that has none) resets nothing."""
    return not any(not s.banned for s in _stores(session, account))


def _stores(session: Session, account: Account) -> list[Merchant]:
    ids = [s.id for s in stores.stores_of(session, account.id, openable_only=False)]
    return [m for m in (session.get(Merchant, i) for i in ids) if m is not None]


def account_of(session: Session, token: str, secret_key: str, *, lock: bool = False) -> Account | None:
    """The account this token may reset, or None: forged, older than ``LIFETIME``, used
    (the password changed since), or the account is gone or shut out. ``lock``: hold the
    account's row, so two submissions of one link cannot both succeed."""
    if not token or len(token) > TOKEN_MAX:
        return None
    try:
        data = _signer(secret_key).loads(token, max_age=int(LIFETIME.total_seconds()))
        account_id = uuid.UUID(data["m"])
        fingerprint = data["p"]
    except (BadData, KeyError, TypeError, ValueError):
        return None
    account = session.get(Account, account_id, with_for_update=lock)
    if account is None or _fingerprint(account.password_hash) != fingerprint or _shut_out(session, account):
        return None
    return account


def request_reset(session: Session, email: str, *, secret_key: str, dashboard_url: str) -> bool:
    """Email a reset link to the account of ``email`` if there is one; whether one was written."""
    email = email.strip()[:320]
    if not email:
        return False
    account = stores.find_account(session, email)
    if account is None:
        return False
    about = [s for s in _stores(session, account) if not s.banned]
    if not about:
        return False
    link = f"{dashboard_url}/reset/{make_token(account, secret_key)}"
    minutes = int(LIFETIME.total_seconds() // 60)
    text = (
        "Someone (we hope you) asked to reset the password of your Kassa account.\n\n"
        f"Choose a new password here (the link works once, for {minutes} minutes):\n{link}\n\n"
        "Changing it signs out every browser logged in to your account.\n"
        "If you did not ask for this, ignore this email: your password stays as it is.\n"
    )
    notices.email_merchant(
        session,
        about[0].id,  # a notice row belongs to a store: the account's first
        test_mode=False,
        event_type=EVENT_TYPE,
        kind=KIND,
        subject="Reset your Kassa password",
        text=text,
        payload={},
        recipient=account.email,
    )
    return True


def reset(session: Session, account: Account, new: str, confirm: str, *, actor: audit.Actor) -> None:
    """Set the new password (the sign-up's rules); AccountError says why not. The caller
    revokes the logins; audited in each of the account's stores."""
    if new != confirm:
        raise merchants.AccountError("the two passwords do not match")
    account.password_hash = merchants.hash_password(merchants.check_new_password(new))
    audit.record_for_account(session, account.id, actor, "account.password_reset", account.email)
