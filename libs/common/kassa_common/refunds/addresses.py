"""A claim's destination, checked for the refund's network (DESIGN §8), and where the
network's watcher stood at the claim (only later blocks can pay the refund)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.addresses import InvalidAddress, receiving_address
from kassa_common.chains.networks import shipped
from kassa_common.errors import InvalidClaim
from kassa_common.models import ChainCursor, Payment, Refund


def _invalid(reason: str) -> InvalidClaim:
    return InvalidClaim(reason, [{"field": "address", "message": reason}])


def check_address(session: Session, refund: Refund, text: str, *, registry: Any = None) -> str:
    """``text`` as the address to pay the refund to (normalised: EIP-55 on EVM networks), or
    InvalidClaim with the reason: not an address of the network (format, EIP-55 checksum,
    bech32/base58 checksum, another Bitcoin network), the zero address, or an address Kassa
    gave a payment (funds sent there would come back to the merchant, not the customer)."""
    network = (registry or shipped()).get(refund.network) or shipped().get(refund.network)
    if network is None:
        raise _invalid(f"refunds on {refund.network} are not supported")
    try:
        address = receiving_address(network, text)
    except InvalidAddress as exc:
        raise _invalid(str(exc)) from None
    deposit = session.scalar(sa.select(sa.exists().where(sa.func.lower(Payment.address) == address.lower())))
    if deposit:
        raise _invalid("this is a payment address of the merchant: give an address of your own wallet")
    return address


def watcher_height(session: Session, refund: Refund) -> int | None:
    """The height the network's watcher had scanned to (None: test mode, or no watcher yet)."""
    if refund.test_mode:
        return None
    return session.scalar(sa.select(ChainCursor.block_number).where(ChainCursor.network == refund.network))
