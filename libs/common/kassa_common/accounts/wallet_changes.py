"""Guarded wallet changes (DESIGN §10): a live wallet change waits before it applies.

The policy is decided here, not in the dashboard: ``asks_password`` (which changes ask for
the password, and the code with two-factor sign-in on, again), ``hold_hours`` (which are
held, and for how long) and ``request_change`` (the one call a dashboard change makes:
checked, then held and emailed, or applied at once).

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
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.accounts import merchants, notices
from kassa_common.models import Merchant, WalletChange
from kassa_common.timefmt import utcnow

EVENT_TYPE = "wallet.change_held"  # an internal row for the email (never published, not listed)
KIND = "wallet_change"


def asks_password(mode: str) -> bool:
    """Whether changing a wallet of ``mode`` asks for the password (and, with two-factor
    sign-in on, a current code) again: every mode but test, where no money moves, so a
    stolen session alone cannot redirect the money. A development stack asks too."""
    return mode != "test"


def hold_hours(mode: str, *, configured_hours: float, development: bool) -> float:
    """Hours a wallet change of ``mode`` waits (``configured_hours``: WALLET_CHANGE_HOLD_HOURS):
    none in test mode or on a development stack."""
    return 0.0 if mode != "live" or development else configured_hours


@dataclass(frozen=True)
class Requested:
    """What became of a requested change: held (emailed, cancelable) or applied at once, and
    the warning to show whoever asked (a published test key on a development stack)."""

    held: bool
    warning: str | None


def request_change(
    session: Session,
    merchant: Merchant,
    mode: str,
    chain: str,
    *,
    xpub: str | None = None,
    settlement_address: str | None = None,
    configured_hours: float,
    development: bool,
    dashboard_url: str,
    actor: audit.Actor,
) -> Requested:
    """A change of where ``mode``'s payments on ``chain`` go, asked for in the dashboard (the
    caller has asked for the password again when ``asks_password``): an EVM settlement
    address when ``settlement_address`` is given, else the extended public key ``xpub``.
    Checked, then held for ``hold_hours`` and emailed, or applied at once when there is no
    hold. Raises a ``DomainError`` saying why the key or address is refused."""
    hours = hold_hours(mode, configured_hours=configured_hours, development=development)
    held: WalletChange | None = None
    warning = None
    if settlement_address is not None:
        if hours > 0:
            target = merchants.check_settlement_address(mode, settlement_address)
            held = hold(
                session, merchant, mode, chain, settlement_address=target, hold_hours=hours, dashboard_url=dashboard_url
            )
        else:
            target = merchants.set_settlement_address(session, merchant.id, mode, settlement_address)
    else:
        if hours > 0:
            saved = merchants.check_wallet(mode, chain, xpub or "", allow_test_keys=development)
            held = hold(session, merchant, mode, chain, xpub=saved.xpub, hold_hours=hours, dashboard_url=dashboard_url)
        else:
            saved = merchants.set_wallet(session, merchant.id, mode, chain, xpub or "", allow_test_keys=development)
        target, warning = saved.xpub, saved.warning
    what = "settlement address" if settlement_address is not None else "extended public key"
    if held is not None:
        detail = f"{mode} {chain} {what} {target}, applies at {held.applies_at:%Y-%m-%d %H:%M} UTC"
        audit.record(session, merchant.id, actor, "wallet.change_requested", "wallet_change", held.id, detail)
    else:
        audit.record(session, merchant.id, actor, "wallet.changed", "wallet", f"{mode}/{chain}", f"{what} {target}")
    return Requested(held=held is not None, warning=warning)


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


def cancel_by_token(session: Session, token: str, *, actor: audit.Actor) -> WalletChange | None:
    """Cancel the pending change of this token; None when there is none (unknown token,
    already applied or canceled: the link works once)."""
    change = session.scalars(_of_token(token).with_for_update()).first()
    if change is not None:
        cancel(session, change)
        _audit_cancel(
            session, change.merchant_id, change.id, actor, f"{change.mode} {change.chain}, by the emailed link"
        )
    return change


def _audit_cancel(
    session: Session, merchant_id: uuid.UUID, change_id: uuid.UUID, actor: audit.Actor, detail: str
) -> None:
    audit.record(session, merchant_id, actor, "wallet.change_canceled", "wallet_change", change_id, detail)


def cancel_own(session: Session, merchant_id: uuid.UUID, change_id: uuid.UUID, *, actor: audit.Actor) -> bool:
    """The dashboard's cancel button: the merchant's own pending change."""
    done = session.execute(
        sa.update(WalletChange)
        .where(
            WalletChange.id == change_id,
            WalletChange.merchant_id == merchant_id,
            WalletChange.applied_at.is_(None),
            WalletChange.canceled_at.is_(None),
        )
        .values(canceled_at=utcnow())
        .returning(WalletChange.mode, WalletChange.chain)
    ).first()
    if done is not None:
        _audit_cancel(session, merchant_id, change_id, actor, f"{done.mode} {done.chain}")
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
        target = change.xpub or change.settlement_address
        detail = f"{change.mode} {change.chain} {target}, after its hold"
        audit.record(
            session, change.merchant_id, audit.SYSTEM, "wallet.change_applied", "wallet_change", change.id, detail
        )
    return len(due)
