"""Guarded wallet changes (DESIGN §10): a live wallet change waits before it applies.

A change of where live money goes (an extended public key or an EVM settlement address),
asked for in the dashboard with the password again, is stored here and held for
``WALLET_CHANGE_HOLD_HOURS``; the merchant is emailed at once with a link to cancel it (a
random one-time token, only its SHA-256 kept). The link opens a page whose button (a POST,
with the page's CSRF token) cancels: it needs no login, since it can only stop a change,
and a mail scanner fetching the link cancels nothing. Payments created meanwhile use the wallet in force. The expirer
applies due changes (``apply_due``): the one writer of held changes into ``wallets``, so the
statement that creates a payment keeps reading one table, and a change applies at its time
even if nobody opens the dashboard.

A hold of 0 (test mode, a development stack, or the setting at 0) applies at once, and so
does the operator's ``kassa wallet set``. A newer change of the same chain replaces a
pending one (the older is canceled).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import merchants, notices
from kassa_common.models import Merchant, WalletChange
from kassa_common.timefmt import utcnow

EVENT_TYPE = "wallet.change_held"  # an internal row for the email (never published, not listed)
KIND = "wallet_change"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def hold(
    session: Session,
    merchant: Merchant,
    mode: str,
    chain: str,
    *,
    xpub: str | None = None,
    settlement_address: str | None = None,
    hold_hours: float,
    dashboard_url: str,
) -> WalletChange:
    """Store a checked change applying in ``hold_hours`` and write the merchant's email."""
    now = utcnow()
    session.execute(
        sa.update(WalletChange)
        .where(
            WalletChange.merchant_id == merchant.id,
            WalletChange.mode == mode,
            WalletChange.chain == chain,
            WalletChange.applied_at.is_(None),
            WalletChange.canceled_at.is_(None),
        )
        .values(canceled_at=now)
    )
    token = secrets.token_urlsafe(32)
    change = WalletChange(
        id=uuid.uuid4(),
        merchant_id=merchant.id,
        mode=mode,
        chain=chain,
        xpub=xpub,
        settlement_address=settlement_address,
        cancel_token_hash=_hash(token),
        created_at=now,
        applies_at=now + timedelta(hours=hold_hours),
    )
    session.add(change)
    session.flush()
    link = f"{dashboard_url}/wallets/cancel/{token}"
    target = xpub or settlement_address or ""
    text = (
        f"A change of your {mode} {chain} wallet was asked for in the Kassa dashboard.\n\n"
        f"New {'settlement address' if settlement_address else 'extended public key'}: {target}\n"
        f"It applies at {change.applies_at:%Y-%m-%d %H:%M} UTC; until then payments keep going to "
        "the current wallet.\n\n"
        f"If you did not ask for it, cancel it now and change your password:\n{link}\n"
    )
    notices.email_merchant(
        session,
        merchant.id,
        test_mode=mode == "test",
        event_type=EVENT_TYPE,
        kind=KIND,
        subject=f"Your {mode} {chain} wallet changes at {change.applies_at:%Y-%m-%d %H:%M} UTC",
        text=text,
        payload={"wallet_change": str(change.id)},
    )
    return change


def pending(session: Session, merchant_id: uuid.UUID, mode: str) -> dict[str, WalletChange]:
    """The change on hold per chain."""
    rows = session.scalars(
        sa.select(WalletChange).where(
            WalletChange.merchant_id == merchant_id,
            WalletChange.mode == mode,
            WalletChange.applied_at.is_(None),
            WalletChange.canceled_at.is_(None),
        )
    )
    return {c.chain: c for c in rows}


def cancel(session: Session, change: WalletChange, now: datetime | None = None) -> None:
    change.canceled_at = now or utcnow()


def _of_token(token: str):
    return sa.select(WalletChange).where(
        WalletChange.cancel_token_hash == _hash(token[:100]),
        WalletChange.applied_at.is_(None),
        WalletChange.canceled_at.is_(None),
    )


def pending_by_token(session: Session, token: str) -> WalletChange | None:
    """The pending change this link's token cancels (read only: opening the link changes nothing)."""
    return session.scalars(_of_token(token)).first()


def cancel_by_token(session: Session, token: str) -> WalletChange | None:
    """Cancel the pending change of this token; None when there is none (unknown token,
    already applied or canceled: the link works once)."""
    change = session.scalars(_of_token(token).with_for_update()).first()
    if change is not None:
        cancel(session, change)
    return change


def cancel_own(session: Session, merchant_id: uuid.UUID, change_id: uuid.UUID) -> bool:
    """The dashboard's cancel button: the merchant's own pending change."""
    done = session.scalar(
        sa.update(WalletChange)
        .where(
            WalletChange.id == change_id,
            WalletChange.merchant_id == merchant_id,
            WalletChange.applied_at.is_(None),
            WalletChange.canceled_at.is_(None),
        )
        .values(canceled_at=utcnow())
        .returning(WalletChange.id)
    )
    return done is not None


def apply_due(session: Session, limit: int = 100) -> int:
    """Write every due pending change into ``wallets`` (the expirer's job)."""
    now = utcnow()
    due = list(
        session.scalars(
            sa.select(WalletChange)
            .where(
                WalletChange.applied_at.is_(None),
                WalletChange.canceled_at.is_(None),
                WalletChange.applies_at <= now,
            )
            .order_by(WalletChange.applies_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    )
    for change in due:
        merchants.upsert_wallet(
            session,
            change.merchant_id,
            change.mode,
            change.chain,
            xpub=change.xpub,
            settlement_address=change.settlement_address,
        )
        change.applied_at = now
    return len(due)
