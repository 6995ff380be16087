"""What the hosted checkout shows besides the payment itself: the wallet URI of what is
still due and its QR code, why a cancel was refused, and the networks a product page offers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import segno
import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains import uris
from kassa_common.chains.networks import Network, Registry, Token
from kassa_common.models import Payment, Transfer
from kassa_common.payments import remaining_units
from kassa_common.pricing.amounts import units_text
from kassa_common.statuses import PaymentStatus, TransferStatus


def payment_uri(payment: Payment, network: Network | None) -> str:
    """EIP-681 for EVM networks, BIP21 for Bitcoin: what a wallet app scans, asking for what
    is still due (the remainder after a partial payment)."""
    return uris.payment_request(network, payment.token, payment.address, remaining_units(payment), payment.decimals)


def wallet_request(payment: Payment, network: Network | None) -> dict | None:
    """What "Pay with browser wallet" (EIP-1193) sends for a live EVM payment: what is still
    due in base units, the token's contract (None: the native coin) and the chain id to ask
    the wallet for; None for a test payment (simulated, nothing to send) or a Bitcoin one."""
    token = network.token(payment.token) if network is not None else None
    if payment.test_mode or network is None or network.kind != "evm" or not network.chain_id or token is None:
        return None
    return {"units": str(remaining_units(payment)), "token": token.contract, "chain_id": network.chain_id}


def qr_svg(uri: str) -> str:
    """An inline SVG (no XML declaration, no style attributes) of ``uri``."""
    qr = segno.make(uri, error="m", micro=False)
    return qr.svg_inline(scale=4, border=2, omitsize=True, dark="#111", light="#fff", title="Payment QR code")


def why_not_canceled(payment: Payment) -> str:
    """The customer's words for a refused cancel."""
    if payment.status == PaymentStatus.PENDING:
        return (
            "Your transfer to this payment has been seen on the chain, so the payment can no longer be "
            "canceled. It completes once the transfer has its confirmations."
        )
    return f"This payment is {status_words(payment.status)} and can no longer be canceled."


def status_words(status: str) -> str:
    """A payment status as a sentence says it ("partially paid")."""
    return {"COMPLETED": "complete"}.get(status, status.lower().replace("_", " "))


def networks_for(registry: Registry, test_mode: bool, development: bool = False) -> list[Network]:
    """The networks a customer may pick: those live-enabled in live mode, every one in test
    mode; the development chains only on a development stack."""
    return [n for n in registry if (test_mode or n.live_enabled) and (development or not n.dev)]


def default_pair(pairs: list[tuple[Network, Token]]) -> str | None:
    """The option a product page starts on: the first stablecoin (USDC, then USDT), else the first."""
    for symbol in ("USDC", "USDT"):
        for network, token in pairs:
            if token.symbol == symbol:
                return f"{network.name}:{token.symbol}"
    return f"{pairs[0][0].name}:{pairs[0][1].symbol}" if pairs else None


@dataclass(frozen=True)
class Arrival:
    """A transfer of the payment's token on its network, as the customer sees it."""

    amount: str
    tx_hash: str
    explorer_url: str | None  # None: no public explorer (or a simulated test transfer)
    confirmed: bool
    confirmations: int
    late: bool  # arrived after the payment had expired or been canceled


def arrivals(session: Session, payment: Payment, network: Network | None) -> list[Arrival]:
    """What reached the payment's address in its token on its network (seen or confirmed),
    oldest first. A test payment's transfers are simulated: no explorer has them."""
    rows = session.scalars(
        sa.select(Transfer)
        .where(
            Transfer.payment_id == payment.id,
            Transfer.network == payment.network,
            Transfer.counted.is_(True),
            Transfer.status.in_((TransferStatus.SEEN, TransferStatus.CONFIRMED)),
            Transfer.amount_units > 0,
        )
        .order_by(Transfer.created_at, Transfer.position)
    ).all()
    explorer = network if network is not None and not payment.test_mode else None
    return [
        Arrival(
            amount=units_text(t.amount_units, payment.decimals),
            tx_hash=t.tx_hash,
            explorer_url=explorer.explorer_url(t.tx_hash) if explorer else None,
            confirmed=t.status == TransferStatus.CONFIRMED,
            confirmations=t.confirmations,
            late=t.late,
        )
        for t in rows
    ]


def back_url(payment: Payment) -> str | None:
    """Where "back to the merchant" goes once the payment is over: ``redirect_url`` after a
    completed payment; ``cancel_url`` (else ``redirect_url``) after one that did not complete."""
    if payment.status == PaymentStatus.COMPLETED:
        return payment.redirect_url
    if payment.status in (PaymentStatus.EXPIRED, PaymentStatus.CANCELED):
        return payment.cancel_url or payment.redirect_url
    return None


def short_hash(tx_hash: str) -> str:
    """A transaction hash short enough for a phone ("0x1234…cdef"); the link carries all of it."""
    return tx_hash if len(tx_hash) <= 20 else f"{tx_hash[:10]}…{tx_hash[-8:]}"


def time_left(expires_at: datetime, now: datetime) -> str:
    """The countdown's first value, "mm:ss" (what the page shows without JavaScript)."""
    left = max(0, int((expires_at - now).total_seconds()))
    return f"{left // 60:02d}:{left % 60:02d}"
