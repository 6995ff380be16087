"""A claim's destination, checked for the refund's network (DESIGN §8), where the network
stood at the claim (only later blocks can pay the refund), and the payout's tag."""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.addresses import InvalidAddress, receiving_address
from kassa_common.chains.networks import shipped
from kassa_common.errors import InvalidClaim
from kassa_common.models import ChainCursor, Payment, Refund
from kassa_common.refunds.onchain import quorum_tip
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.refunds")
TAGS = range(1, 1000)  # base units added to the amount: payout_amount = amount + tag
# A completed refund's tag stays taken this long: a reorg deeper than the confirmations may
# put it back to AWAITING_PAYMENT, where its payout (mined again) must still be its own.
TAG_REST = timedelta(days=1)


def _invalid(reason: str) -> InvalidClaim:
    return InvalidClaim(reason, [{"field": "address", "message": reason}])


def check_address(session: Session, refund: Refund, text: str, *, registry: Any = None) -> str:
    """``text`` as the address to pay the refund to (normalised: EIP-55 on EVM networks), or
    InvalidClaim with the reason: not an address of the network (format, EIP-55 checksum,
    bech32/base58 checksum, another Bitcoin network, a segwit version not in use), the zero
    address, or an address Kassa gave a payment of the refund's own merchant (funds sent
    there would come back to the merchant, not the customer). Another merchant's deposit
    address is answered like any address: the form tells no one which addresses are Kassa's."""
    network = (registry or shipped()).get(refund.network) or shipped().get(refund.network)
    if network is None:
        raise _invalid(f"refunds on {refund.network} are not supported")
    try:
        address = receiving_address(network, text)
    except InvalidAddress as exc:
        raise _invalid(str(exc)) from None
    deposit = session.scalar(
        sa.select(
            sa.exists().where(
                sa.func.lower(Payment.address) == address.lower(), Payment.merchant_id == refund.merchant_id
            )
        )
    )
    if deposit:
        raise _invalid("this is a payment address of the merchant: give an address of your own wallet")
    return address


def claim_height(session: Session, refund: Refund, *, registry: Any = None) -> int | None:
    """The block the network stood at when the refund is claimed: its nodes' tip, read under
    the RPC quorum (``onchain.quorum_tip``), not the watcher's scanned height, which lags (a
    transfer in a block between the two would count as after the claim). Only when no node
    answers, the watcher's height. None: test mode (no chain), or neither is known."""
    if refund.test_mode:
        return None
    network = (registry or shipped()).get(refund.network)
    tip = quorum_tip(network)
    if tip is not None:
        return tip
    scanned = session.scalar(sa.select(ChainCursor.block_number).where(ChainCursor.network == refund.network))
    log.warning(
        "refund %s: no %s node answered at its claim; the watcher's height %s is its claim block",
        refund.id,
        refund.network,
        scanned,
    )
    return scanned


def payout_tag(session: Session, refund: Refund, address: str, *, now: Any = None) -> int:
    """A tag for the refund's payout: among 1-999 base units, one that no open refund claimed
    to ``address`` on its network holds (every merchant, both modes), nor one completed in
    the last ``TAG_REST``; chosen at random. Claims to one address take turns here (a
    transaction-scoped advisory lock on network and address), so two never pick the same and
    the unique index ``refunds_open_payout_tag`` is never what refuses one. InvalidClaim when
    every tag is taken (999 refunds waiting at one address)."""
    key = f"refund-payout-tag:{refund.network.upper()}:{address.lower()}"
    session.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(key, 0))))  # pragma: no mutate
    since = (now or utcnow()) - TAG_REST
    taken = set(
        session.scalars(
            sa.select(Refund.payout_tag).where(
                Refund.network == refund.network,
                sa.func.lower(Refund.address) == address.lower(),
                Refund.payout_tag.is_not(None),
                Refund.id != refund.id,
                sa.or_(
                    Refund.status == RefundStatus.AWAITING_PAYMENT,
                    sa.and_(Refund.status == RefundStatus.COMPLETED, Refund.completed_at >= since),
                ),
            )
        )
    )
    free = [t for t in TAGS if t not in taken]
    if not free:
        raise _invalid("this address already waits for too many refunds: give another address of your wallet")
    return secrets.choice(free)
