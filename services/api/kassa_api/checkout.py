"""What the hosted checkout shows besides the payment itself: the wallet URI of what is
still due and its QR code, why a cancel was refused, and the networks a product page offers."""

from __future__ import annotations

import segno

from kassa_common.chains import uris
from kassa_common.chains.networks import Network, Registry, Token
from kassa_common.models import Payment
from kassa_common.payments import remaining_units
from kassa_common.statuses import PaymentStatus


def payment_uri(payment: Payment, network: Network | None) -> str:
    """EIP-681 for EVM networks, BIP21 for Bitcoin: what a wallet app scans, asking for what
    is still due (the remainder after a partial payment)."""
    return uris.payment_request(network, payment.token, payment.address, remaining_units(payment), payment.decimals)


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
    return f"This payment is {payment.status.lower().replace('_', ' ')} and can no longer be canceled."


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
