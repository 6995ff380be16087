"""Two-factor sign-in with TOTP (RFC 6238, ``pyotp``): 6 digits, 30 s steps, one step of
clock drift either way, each step's code accepted once (a code seen on the wire cannot be
replayed). Enrolment shows a QR code (``segno``, an SVG data URI) and the secret, and
takes effect only once a code from the merchant's app confirms it; until then the secret
is kept nowhere: it is derived again at each request from SECRET_KEY, the login and a
random nonce (``enrolment_secret``), so the browser's cookie never holds it. Enrolment
makes ten one-time recovery codes, shown once and stored salted: PBKDF2-HMAC-SHA256 with a
random salt per code (``pbkdf2_sha256$<iterations>$<salt>$<hash>``; a few thousand
iterations, since all ten are tried at each use). Codes stored before that, as a bare
SHA-256, keep working until used or replaced. An operator resets it with
``kassa merchant 2fa EMAIL --disable``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from typing import Any, cast

import pyotp
import segno
import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.models import Account
from kassa_common.timefmt import utcnow

ISSUER = "Kassa"
RECOVERY_CODES = 10
STEP = 30
_CODE = re.compile(r"[0-9]{6}")
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"


def new_secret() -> str:
    return pyotp.random_base32()


def enrolment_secret(key: str, login_ref: str, nonce: str) -> str:
    """The secret offered to a login while it enrols (160 bits, base32): the same for the
    same login and nonce, unknowable without ``key`` (the server's SECRET_KEY)."""
    message = f"totp-enrolment|{login_ref}|{nonce}".encode()
    return base64.b32encode(hmac.new(key.encode(), message, hashlib.sha256).digest()[:20]).decode()


def provisioning_uri(secret: str, email: str) -> str:
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def qr_svg(uri: str) -> str:
    """The QR code of ``uri`` as an SVG data URI (an <img> source the pages' CSP allows)."""
    return segno.make(uri, error="m").svg_data_uri(scale=5, border=2)


def matching_step(secret: str, code: str, now: float | None = None) -> int | None:
    """The time step whose code ``code`` is (this one or a neighbour), or None."""
    code = code.strip().replace(" ", "")
    if not _CODE.fullmatch(code):
        return None
    totp, now = pyotp.TOTP(secret), time.time() if now is None else now
    current = int(now // STEP)
    for step in (current, current - 1, current + 1):
        if secrets.compare_digest(totp.at(step * STEP), code):
            return step
    return None


def check_code(session: Session, account: Account, code: str) -> bool:
    """A valid code of the account's enabled secret, not used before (recorded as used)."""
    if not account.totp_secret or account.totp_enabled_at is None:
        return False
    step = matching_step(account.totp_secret, code)
    if step is None:
        return False
    used = cast(
        sa.CursorResult[Any],
        session.execute(
            sa.update(Account)
            .where(Account.id == account.id, sa.func.coalesce(Account.totp_last_step, -1) < step)
            .values(totp_last_step=step)
        ),
    ).rowcount
    return bool(used)


HASH_SCHEME, HASH_ITERATIONS = "pbkdf2_sha256", 5000


def _normal(code: str) -> str:
    return code.strip().lower().replace("-", "").replace(" ", "")


def _legacy_hash(code: str) -> str:
    """How codes were stored before salting (a bare SHA-256): read, never written."""
    return hashlib.sha256(_normal(code).encode()).hexdigest()


def _salted(normal: str, salt: bytes, iterations: int) -> str:
    return hashlib.pbkdf2_hmac("sha256", normal.encode(), salt, iterations).hex()


def hash_recovery_code(code: str) -> str:
    """The stored form of a recovery code: salted, so one leaked table cannot be looked up."""
    salt = secrets.token_bytes(16)
    return f"{HASH_SCHEME}${HASH_ITERATIONS}${salt.hex()}${_salted(_normal(code), salt, HASH_ITERATIONS)}"


def matches_recovery_code(stored: str, code: str) -> bool:
    """Whether ``code`` is the recovery code stored as ``stored`` (salted, or the older bare
    SHA-256); a malformed entry matches nothing."""
    parts = stored.split("$")
    if len(parts) == 1:  # the older unsalted form
        return hmac.compare_digest(stored, _legacy_hash(code))
    if len(parts) != 4 or parts[0] != HASH_SCHEME or not parts[1].isdigit() or int(parts[1]) > 1_000_000:
        return False
    try:
        salt = bytes.fromhex(parts[2])
    except ValueError:
        return False
    return hmac.compare_digest(parts[3], _salted(_normal(code), salt, int(parts[1])))


def new_recovery_codes() -> list[str]:
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_ALPHABET) for _ in range(10))
        codes.append(f"{raw[:5]}-{raw[5:]}")
    return codes


def use_recovery_code(session: Session, account: Account, code: str) -> bool:
    """Spend one recovery code (each works once: the entry it matched is removed, and two
    uses at once cannot both remove it)."""
    if account.totp_enabled_at is None or not code.strip() or len(code) > 40:
        return False
    stored = session.scalar(sa.select(Account.recovery_code_hashes).where(Account.id == account.id)) or []
    entry = next((e for e in stored if matches_recovery_code(e, code)), None)
    if entry is None:
        return False
    spent = cast(
        sa.CursorResult[Any],
        session.execute(
            sa.update(Account)
            .where(Account.id == account.id, Account.recovery_code_hashes.any(entry))  # type: ignore[arg-type]
            .values(recovery_code_hashes=sa.func.array_remove(Account.recovery_code_hashes, entry))
        ),
    ).rowcount
    return bool(spent)


def enable(session: Session, account: Account, secret: str, code: str, *, actor: audit.Actor) -> list[str] | None:
    """Turn two-factor sign-in on with ``secret`` once ``code`` is one of its codes: the
    recovery codes (to show once), or None when the code does not match."""
    step = matching_step(secret, code)
    if step is None:
        return None
    codes = new_recovery_codes()
    account.totp_secret, account.totp_enabled_at, account.totp_last_step = secret, utcnow(), step
    account.recovery_code_hashes = [hash_recovery_code(c) for c in codes]
    session.flush()
    audit.record_for_account(session, account.id, actor, "account.two_factor_enabled", account.email)
    return codes


def disable(session: Session, account: Account, *, actor: audit.Actor) -> None:
    """Turn two-factor sign-in off (audited in each of the account's stores)."""
    if account.totp_enabled_at is not None:
        audit.record_for_account(session, account.id, actor, "account.two_factor_disabled", account.email)
    account.totp_secret = account.totp_enabled_at = account.totp_last_step = None
    account.recovery_code_hashes = []
