"""The hosted checkout's commands and queries: what a customer may see of a payment, the
payment URI and its QR code, cancel, and the test-mode buttons."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import segno
import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import payments as sm
from kassa_common import testmode
from kassa_common.chains.networks import Network, Registry
from kassa_common.chains.rates import from_base_units
from kassa_common.errors import InvalidTransition
from kassa_common.ids import looks_like_short_id
from kassa_common.models import Payment
from kassa_common.timefmt import iso, utcnow


class NotTestPayment(Exception):
    """A test-mode button was pressed for a live payment."""


def find_by_short_id(session: Session, short_id: str, *, lock: bool = False) -> Payment | None:
    if not looks_like_short_id(short_id):
        return None
    stmt = sa.select(Payment).where(Payment.short_id == short_id.upper())
    if lock:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    return session.scalars(stmt).first()


def crypto(units: int | Decimal, decimals: int) -> str:
    return format(from_base_units(int(units), decimals).normalize(), "f")


def payment_uri(payment: Payment, network: Network | None) -> str:
    """EIP-681 for EVM networks, BIP21 for Bitcoin: what a wallet app scans."""
    units = int(payment.crypto_amount_units)
    if network is None or network.kind == "bitcoin":
        return f"bitcoin:{payment.address}?amount={crypto(units, payment.decimals)}"
    token = network.token(payment.token)
    chain = f"@{network.chain_id}" if network.chain_id else ""
    if token is None or token.native:
        return f"ethereum:{payment.address}{chain}?value={units}"
    return f"ethereum:{token.contract}{chain}/transfer?address={payment.address}&uint256={units}"


def qr_svg(uri: str) -> str:
    """An inline SVG (no XML declaration, no style attributes) of ``uri``."""
    qr = segno.make(uri, error="m", micro=False)
    return qr.svg_inline(scale=4, border=2, omitsize=True, dark="#111", light="#fff", title="Payment QR code")


def remaining(payment: Payment) -> int:
    return testmode.remaining_units(payment)


def public_status(payment: Payment) -> dict[str, Any]:
    """The status a customer may see: no metadata, merchant or customer data."""
    return {
        "status": payment.status,
        "amount": float(payment.amount.quantize(Decimal("0.01"))),
        "token": payment.token,
        "network": payment.network,
        "crypto_amount": crypto(payment.crypto_amount_units, payment.decimals),
        "amount_received": crypto(payment.amount_received_units, payment.decimals),
        "amount_remaining": crypto(remaining(payment), payment.decimals),
        "confirmations": payment.confirmations,
        "required_confirmations": payment.required_confirmations,
        "seen": payment.status == sm.PENDING and bool(payment.transaction_hash),
        "expires_at": iso(payment.expires_at),
        "redirect_url": payment.redirect_url if payment.status == sm.COMPLETED else None,
        "test_mode": payment.test_mode,
    }


def cancel(session: Session, payment: Payment) -> Payment:
    return sm.apply(session, payment.id, "cancel")


def _test_payment(session: Session, payment: Payment) -> Payment:
    if not payment.test_mode:
        raise NotTestPayment(payment.short_id)
    locked = sm.lock(session, payment.id)
    if locked.status not in sm.OPEN:
        raise InvalidTransition(f"a {locked.status} payment cannot be paid")
    return locked


def simulate_pay(session: Session, payment: Payment, *, part: bool = False) -> str:
    """Queue a simulated confirmed transfer of the remainder (or half of it)."""
    payment = _test_payment(session, payment)
    units = remaining(payment)
    if part:
        units = max(units // 2, 1)
    payment.test_simulated_at = utcnow()
    return testmode.simulate_transfer(session, payment, units)


def let_expire(session: Session, payment: Payment) -> None:
    """Stop auto-completion and make the payment due now; the expirer does the rest."""
    payment = _test_payment(session, payment)
    payment.test_auto_complete = False
    payment.expires_at = utcnow()


def networks_for(registry: Registry, test_mode: bool) -> list[Network]:
    return [n for n in registry if test_mode or n.live_enabled]
