"""Two-factor sign-in with TOTP (RFC 6238, ``pyotp``): 6 digits, 30 s steps, one step of
clock drift either way, each step's code accepted once (a code seen on the wire cannot be
replayed). Enrolment shows a QR code (``segno``, an SVG data URI) and the secret, and
takes effect only once a code from the merchant's app confirms it; it makes ten one-time
recovery codes, shown once and stored as SHA-256 hashes (they are random, not passwords).
An operator resets it with ``kassa merchant 2fa EMAIL --disable``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Any, cast

import pyotp
import segno
import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import Merchant
from kassa_common.timefmt import utcnow

ISSUER = "Kassa"
RECOVERY_CODES = 10
STEP = 30
_CODE = re.compile(r"[0-9]{6}")
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"


def new_secret() -> str:
    return pyotp.random_base32()


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


def check_code(session: Session, merchant: Merchant, code: str) -> bool:
    """A valid code of the merchant's enabled secret, not used before (recorded as used)."""
    if not merchant.totp_secret or merchant.totp_enabled_at is None:
        return False
    step = matching_step(merchant.totp_secret, code)
    if step is None:
        return False
    used = cast(
        sa.CursorResult[Any],
        session.execute(
            sa.update(Merchant)
            .where(Merchant.id == merchant.id, sa.func.coalesce(Merchant.totp_last_step, -1) < step)
            .values(totp_last_step=step)
        ),
    ).rowcount
    return bool(used)


def _hash(code: str) -> str:
    return hashlib.sha256(code.strip().lower().replace("-", "").encode()).hexdigest()


def new_recovery_codes() -> list[str]:
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_ALPHABET) for _ in range(10))
        codes.append(f"{raw[:5]}-{raw[5:]}")
    return codes


def use_recovery_code(session: Session, merchant: Merchant, code: str) -> bool:
    """Spend one recovery code (each works once)."""
    if merchant.totp_enabled_at is None or not code.strip() or len(code) > 40:
        return False
    digest = _hash(code)
    spent = cast(
        sa.CursorResult[Any],
        session.execute(
            sa.update(Merchant)
            .where(Merchant.id == merchant.id, Merchant.recovery_code_hashes.any(digest))  # type: ignore[arg-type]
            .values(recovery_code_hashes=sa.func.array_remove(Merchant.recovery_code_hashes, digest))
        ),
    ).rowcount
    return bool(spent)


def enable(session: Session, merchant: Merchant, secret: str, code: str) -> list[str] | None:
    """Turn two-factor sign-in on with ``secret`` once ``code`` is one of its codes: the
    recovery codes (to show once), or None when the code does not match."""
    step = matching_step(secret, code)
    if step is None:
        return None
    codes = new_recovery_codes()
    merchant.totp_secret, merchant.totp_enabled_at, merchant.totp_last_step = secret, utcnow(), step
    merchant.recovery_code_hashes = [_hash(c) for c in codes]
    session.flush()
    return codes


def disable(merchant: Merchant) -> None:
    merchant.totp_secret = merchant.totp_enabled_at = merchant.totp_last_step = None
    merchant.recovery_code_hashes = []
