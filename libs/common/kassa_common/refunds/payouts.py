"""Refund payouts: the on-chain transfer that pays a claimed refund, from the chain watcher's
reports or from a transaction hash the merchant submits (``complete_with_hash``), and test
mode's simulated payout (``simulate_payout``).

A claimed live refund (``AWAITING_PAYMENT``) is paid by a transfer of its token on its
network to its address of exactly its ``payout_amount`` (the amount plus the claim's tag,
unique among the open refunds claimed to that address: ``addresses.payout_tag``), in a block
after the one its network stood at when it was claimed (``claim_block``), not sent from the
address itself. So an unrelated inflow to a busy address (an exchange's) pays nothing, and
of several refunds claimed to one address (any merchant's) each is paid by its own payout.
The chain watcher watches the addresses of claimed refunds like the payments'
(``kassa_chain_watcher.watchlist``) and its reports reach the settler, which hands those
to an address that is no payment's to ``apply_report`` (``kassa_settler.main.apply_transfer``):

- ``seen`` (not yet confirmed): ``record_payout`` records the transfer on the refund
  (``transfer_ref``, ``payout_units``, ``payout_from``, its block, ``confirmations``); the
  refund waits, and can no longer be canceled;
- ``confirmed`` (the network's required confirmations): ``confirm_payout`` completes the
  refund (``COMPLETED`` with ``transaction_hash`` and ``completed_at``, ``refund.completed``);
- ``orphaned`` (left the chain before it was confirmed): ``revert_payout`` forgets it;
- ``reorged`` (a confirmed payout lost in a reorg deeper than the confirmations): the
  refund goes back to ``AWAITING_PAYMENT`` with ``refund.reorged``; mined again, the
  transfer is reported again and completes it again.

Mode and merchant never mix: a chain transfer completes only live refunds; a test-mode
refund is completed only by ``simulate_payout`` (``kassa dev pay-refund``, the claim page's
test button), whose transaction is ``test_tx_…``, a ref no chain transfer has; a submitted
hash only a refund of the submitting merchant and mode (and never a test one: 409).

One transfer pays at most one refund: ``transfer_ref`` (the transfer's transaction, its place
there and, on EVM, its recipient: what a reorg that moves it cannot change) is unique per
network. A transfer to a payment's own address (a deposit) never reaches here: the settler
gives it to its payment; a Kassa sweep is never a payout. A ``CANCELED`` or ``EXPIRED``
refund is never completed by a later payout.
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.audit import Actor
from kassa_common.errors import NotFound
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Payment, Refund, Sweep
from kassa_common.owner import Owner
from kassa_common.pricing.amounts import units_text
from kassa_common.refunds import onchain, transitions
from kassa_common.refunds.addresses import payout_tag
from kassa_common.refunds.onchain import Payout, PayoutConflict, PayoutRefused, Reader
from kassa_common.refunds.shape import due_units, payout_units
from kassa_common.statuses import RefundStatus, TransferStatus
from kassa_common.timefmt import utcnow

__all__ = [
    "Payout",
    "PayoutConflict",
    "PayoutRefused",
    "apply_report",
    "complete",
    "complete_with_hash",
    "confirm_payout",
    "record_payout",
    "revert_payout",
    "simulate_payout",
]
log = logging.getLogger("kassa.refunds")
SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
AWAITING_PAYMENT, COMPLETED = RefundStatus.AWAITING_PAYMENT, RefundStatus.COMPLETED


def from_report(r: TransferReport) -> Payout:
    return Payout(
        r.network.upper(),
        r.tx_hash,
        r.place,
        r.token.upper(),
        r.to,
        r.amount_units,
        r.block_number,
        r.block_hash,
        r.confirmations,
        r.sender.lower() if r.sender else None,
    )


# -- the watcher's reports -------------------------------------------------------------------


def apply_report(session: Session, r: TransferReport) -> Refund | None:
    """Apply a watcher's report of a transfer to an address that is no payment's; the refund
    it concerns (None: it pays none). The settler passes no zero-value transfer."""
    if r.simulated:
        return None
    payout = from_report(r)
    if r.status == SEEN:
        return record_payout(session, payout)
    if r.status == CONFIRMED:
        return confirm_payout(session, payout)
    return revert_payout(session, payout, lost=r.status == REORGED)


def _lock(session: Session, payout: Payout) -> list[Refund]:
    """The live refunds at the payout's address that it may concern, locked, oldest claim
    first: those waiting for a payout, and whichever this very transfer pays already. A test
    refund is never among them: no chain transfer pays it."""
    return list(
        session.scalars(
            sa.select(Refund)
            .where(
                Refund.network == payout.network,
                Refund.test_mode.is_(False),
                sa.func.lower(Refund.address) == payout.to.lower(),
                sa.or_(Refund.status == AWAITING_PAYMENT, Refund.transfer_ref == payout.ref),
            )
            .order_by(Refund.claimed_at, Refund.created_at, Refund.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    )


def after_claim(refund: Refund, block_number: int | None) -> bool:
    """A transfer in this block may pay the refund (None: not mined yet, so after the claim)."""
    return block_number is None or refund.claim_block is None or block_number > refund.claim_block


def from_itself(refund: Refund, payout: Payout) -> bool:
    """The payout comes from the claimed address itself (the customer moving their own funds)."""
    return bool(payout.sender) and str(payout.sender).lower() == (refund.address or "").lower()


def covers(refund: Refund, payout: Payout) -> bool:
    """The watcher's rule: a live refund's payout is of its token, on its network, of exactly
    its ``payout_amount``, after its claim, not from its own address."""
    return (
        refund.status == AWAITING_PAYMENT
        and not refund.test_mode
        and refund.network.upper() == payout.network
        and refund.token.upper() == payout.token.upper()
        and payout.amount_units == due_units(refund)
        and after_claim(refund, payout.block_number)
        and not from_itself(refund, payout)
    )


def _is_sweep(session: Session, payout: Payout) -> bool:
    """A sweep of a forwarder deposit moves a payment's own funds: never a payout."""
    return bool(
        session.scalar(
            sa.select(
                sa.exists().where(
                    Sweep.network == payout.network, sa.func.lower(Sweep.tx_hash) == payout.tx_hash.lower()
                )
            )
        )
    )


def _choose(session: Session, payout: Payout, *, confirmed: bool) -> tuple[Refund | None, Refund | None]:
    """(the refund this transfer pays already, or else the one it may pay now). A transfer
    pays the oldest claim it covers that no other transfer pays; a confirmed one may also
    take a claim whose payout is only seen so far (that one then pays another, or none)."""
    refunds = _lock(session, payout)
    holder = next((r for r in refunds if r.transfer_ref == payout.ref), None)
    if holder is not None:
        return holder, None
    covered = [r for r in refunds if covers(r, payout)]
    fresh = next((r for r in covered if r.transfer_ref is None), None)
    if fresh is None and confirmed:
        fresh = next((r for r in covered if r.status == AWAITING_PAYMENT), None)
    if fresh is not None and _is_sweep(session, payout):
        return None, None
    return None, fresh


def _hold(refund: Refund, payout: Payout, now: datetime) -> None:
    refund.transfer_ref = payout.ref
    refund.payout_units = Decimal(payout.amount_units)
    refund.payout_block_number = payout.block_number
    refund.payout_block_hash = payout.block_hash
    refund.payout_from = payout.sender
    refund.confirmations = payout.confirmations
    refund.updated_at = now


def _forget(refund: Refund, now: datetime) -> None:
    refund.transfer_ref = refund.payout_units = refund.payout_from = None
    refund.payout_block_number = refund.payout_block_hash = None
    refund.confirmations = 0
    refund.updated_at = now


def record_payout(session: Session, payout: Payout) -> Refund | None:
    """A transfer seen, not yet confirmed: held on the refund it pays (no event)."""
    now = utcnow()
    holder, fresh = _choose(session, payout, confirmed=False)
    if holder is not None and holder.status == AWAITING_PAYMENT and not covers(holder, payout):
        _forget(holder, now)  # mined where it cannot pay it (in the claim's block or before)
        session.flush()
        return holder
    if holder is not None:
        if holder.status == AWAITING_PAYMENT and (
            holder.payout_block_hash != payout.block_hash or payout.confirmations > holder.confirmations
        ):
            _hold(holder, payout, now)  # more confirmations, or mined (or moved) since last seen
            session.flush()
        return holder
    if fresh is None:
        return None
    _hold(fresh, payout, now)
    session.flush()
    log.info("refund %s: payout %s seen (%d confirmation(s))", fresh.id, payout.ref, payout.confirmations)
    return fresh


def confirm_payout(session: Session, payout: Payout) -> Refund | None:
    """A transfer at the network's required confirmations: the refund it pays is COMPLETED."""
    now = utcnow()
    holder, fresh = _choose(session, payout, confirmed=True)
    refund = holder or fresh
    if refund is None:
        return None
    if refund.status == COMPLETED:
        if refund.payout_block_hash != payout.block_hash:  # confirmed again where a reorg moved it
            refund.payout_block_number, refund.payout_block_hash = payout.block_number, payout.block_hash
            refund.updated_at = now
            session.flush()
        return refund
    if refund.status != AWAITING_PAYMENT:
        return refund  # canceled or expired while its payout was seen: it stays so
    if not covers(refund, payout):
        _forget(refund, now)  # seen in the mempool, mined where it cannot pay it
        session.flush()
        return refund
    if fresh is not None and fresh.transfer_ref is not None:  # pragma: no mutate (only logged)
        log.info("refund %s: payout %s confirmed before the one it held (%s)", fresh.id, payout.ref, fresh.transfer_ref)
    complete(session, refund, payout, now)
    return refund


def complete(session: Session, refund: Refund, payout: Payout, now: datetime | None = None) -> Refund:
    """COMPLETED with the payout's transaction, and ``refund.completed`` (the caller holds the lock)."""
    now = now or utcnow()
    _hold(refund, payout, now)
    refund.transaction_hash = payout.tx_hash
    refund.completed_at = now
    transitions.apply(session, refund, transitions.Trigger.COMPLETE)
    log.info("refund %s: completed by %s", refund.id, payout.ref)
    return refund


def revert_payout(session: Session, payout: Payout, *, lost: bool) -> Refund | None:
    """A payout that left the chain: forgotten if it was only seen; a COMPLETED refund whose
    payout a reorg deeper than the confirmations took away (``lost``) waits for a payout again."""
    now = utcnow()
    refund = next((r for r in _lock(session, payout) if r.transfer_ref == payout.ref), None)
    if refund is None or (payout.block_hash is not None and refund.payout_block_hash != payout.block_hash):
        return refund  # not this block's (moved since), or never held
    if refund.status == AWAITING_PAYMENT:
        _forget(refund, now)
        session.flush()
        log.info("refund %s: payout %s left the chain before it was confirmed", refund.id, payout.ref)
    elif refund.status == COMPLETED and lost:
        log.error(
            "refund %s: its confirmed payout %s on %s was lost in a reorg deeper than the required "
            "confirmations; back to AWAITING_PAYMENT, refund.reorged fired",
            refund.id,
            payout.ref,
            payout.network,
        )
        _forget(refund, now)
        refund.transaction_hash = None
        refund.completed_at = None
        _keep_tag_unique(session, refund)
        transitions.apply(session, refund, transitions.Trigger.REORG)
    return refund


def _keep_tag_unique(session: Session, refund: Refund) -> None:
    """A refund back to AWAITING_PAYMENT keeps its tag (its payout, mined again, completes it
    again) unless an open refund claimed to the same address since holds that tag (a claim
    after the tag's rest, ``addresses.TAG_REST``): then it takes a free one, and its new
    ``payout_amount`` is in ``refund.reorged`` (the old payout, mined again, is then proven by
    its hash). Never the unique index's error in the settler."""
    if refund.payout_tag is None or refund.address is None:
        return
    clash = session.scalar(
        sa.select(
            sa.exists().where(
                Refund.network == refund.network,
                sa.func.lower(Refund.address) == refund.address.lower(),
                Refund.payout_tag == refund.payout_tag,
                Refund.status == AWAITING_PAYMENT,
                Refund.id != refund.id,
            )
        )
    )
    if clash:
        refund.payout_tag = payout_tag(session, refund, refund.address)
        log.error("refund %s: its tag was taken by a newer claim to %s; a new payout_amount", refund.id, refund.address)


# -- a hash the merchant submits -------------------------------------------------------------

HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
HASH_PATTERN = r"^\s*(0[xX])?[0-9a-fA-F]{64}\s*$"  # what ``POST /refunds/:id/complete`` documents


def check_hash_format(kind: str, tx_hash: Any) -> str:
    """The hash in the network's form (EVM: ``0x`` and 64 lower-case hex digits; Bitcoin: the
    64 hex digits of the txid), with or without ``0x`` as given; PayoutRefused otherwise."""
    if not isinstance(tx_hash, str) or not tx_hash.strip():
        raise PayoutRefused("transaction_hash is required", [{"field": "transaction_hash", "issue": "required"}])
    digits = tx_hash.strip().removeprefix("0x").removeprefix("0X")
    if not HEX64.match(digits):
        raise PayoutRefused(
            "transaction_hash is not a transaction hash (64 hex digits, 0x first on EVM networks)",
            [{"field": "transaction_hash", "issue": "invalid"}],
        )
    return "0x" + digits.lower() if kind == "evm" else digits.lower()


def complete_with_hash(
    session: Session, owner: Owner, refund_id: uuid.UUID | str, tx_hash: Any, reader: Reader | None, *, actor: Actor
) -> Refund:
    """Complete a claimed live refund by the transaction the merchant says paid it, once it
    is checked on chain under the network's RPC quorum (``onchain.transfers_in``): a transfer
    of the refund's token to its address of at least its amount (the tag is the watcher's
    way to know a payout; a merchant naming the transaction needs none), in a block after
    the claim, at the network's required confirmations, paying no other refund, and none of
    what is never a payout: a transfer from the claimed address itself, a Kassa sweep, or a
    transaction moving a payment's deposit (to a deposit address, or out of one). ``owner``:
    the submitting merchant and mode (another's refund is NotFound); a test-mode refund is
    completed only by simulation (409). ``reader``: ``onchain.Reader`` of its network (None: no
    node configured); ``actor``: who submitted it (audited). PayoutRefused (400), PayoutConflict (409).

    The chain is read before the refund is locked (a node may be slow), then everything is
    checked again under the lock."""
    refund = session.get(Refund, _uuid(refund_id))
    if refund is None or refund.merchant_id != owner.merchant_id or refund.test_mode != owner.test_mode:
        raise NotFound("no such refund")
    if refund.test_mode:
        raise PayoutConflict(
            "a test-mode refund moves no funds, so no transaction completes it: simulate its payout with "
            "`kassa dev pay-refund` or the claim page's test button"
        )
    kind = onchain.kind_of(refund.network, reader)
    tx_hash = check_hash_format(kind, tx_hash)
    _must_await(refund)
    if reader is None:
        raise PayoutConflict(f"no {refund.network} node is configured: the transaction cannot be checked")
    payouts = onchain.transfers_in(reader, tx_hash, refund)
    required = reader.required
    refund = _lock_with_neighbours(session, refund)
    _must_await(refund)
    to_it = [
        p for p in payouts if p.to.lower() == (refund.address or "").lower() and p.token.upper() == refund.token.upper()
    ]
    if not to_it:
        raise PayoutRefused(
            f"transaction {tx_hash} pays someone else: it transfers no {refund.token} to the refund's address "
            f"{refund.address} on {refund.network}"
            + (
                " (coin sent from inside a contract, a Safe for one, is not read from a hash: the watcher "
                "completes the refund once such a payout is confirmed)"
                if kind == "evm" and _is_native(refund)
                else ""
            ),
            [{"field": "transaction_hash", "issue": "wrong_recipient"}],
        )
    _refuse_non_payouts(session, refund, tx_hash, payouts, to_it)
    big_enough = [p for p in to_it if p.amount_units >= int(refund.amount_units)]
    if not big_enough:
        paid = units_text(max(p.amount_units for p in to_it), refund.decimals)
        due = units_text(int(refund.amount_units), refund.decimals)
        raise PayoutRefused(
            f"transaction {tx_hash} is too small: it pays {paid} {refund.token}, the refund is {due} {refund.token}",
            [{"field": "transaction_hash", "issue": "too_small"}],
        )
    after = [p for p in big_enough if after_claim(refund, p.block_number)]
    if not after:
        raise PayoutRefused(
            f"transaction {tx_hash} is in block {big_enough[0].block_number}, not after the refund was claimed "
            f"(block {refund.claim_block})",
            [{"field": "transaction_hash", "issue": "before_claim"}],
        )
    used = _used_by_others(session, refund, [p.ref for p in after])
    free = [p for p in after if p.ref not in used]
    if not free:
        other = used[after[0].ref]
        raise PayoutConflict(f"transaction {tx_hash} is already used for another refund ({other})")
    payout = free[0]
    if payout.confirmations < required:
        raise PayoutConflict(
            f"transaction {tx_hash} is not yet confirmed: {payout.confirmations} of {required} "
            "confirmation(s); submit it again once it has them"
        )
    done = complete(session, refund, payout)
    return transitions.audit_refund(session, done, actor, "refund.completed_with_hash", tx_hash)


def _refuse_non_payouts(
    session: Session, refund: Refund, tx_hash: str, payouts: list[Payout], to_it: list[Payout]
) -> None:
    """PayoutRefused when the transaction is none of the merchant's to give: sent from the
    claimed address itself, a Kassa sweep, or one moving a payment's deposit (paying a
    deposit address, or sent from one)."""
    if all(from_itself(refund, p) for p in to_it):
        raise PayoutRefused(
            f"transaction {tx_hash} comes from the refund's address itself, its own address: the customer's own "
            "transfer pays no refund",
            [{"field": "transaction_hash", "issue": "from_recipient"}],
        )
    if _is_sweep(session, to_it[0]):
        raise PayoutRefused(
            f"transaction {tx_hash} is a Kassa sweep of payments' funds, not a payout of the merchant's",
            [{"field": "transaction_hash", "issue": "sweep"}],
        )
    touched = {p.to.lower() for p in payouts} | {p.sender.lower() for p in payouts if p.sender}
    if touched and session.scalar(sa.select(sa.exists().where(sa.func.lower(Payment.address).in_(sorted(touched))))):
        raise PayoutRefused(
            f"transaction {tx_hash} moves a payment's deposit (to or from a Kassa deposit address): "
            "it is no payout of a refund",
            [{"field": "transaction_hash", "issue": "deposit"}],
        )


def simulate_payout(session: Session, refund_id: uuid.UUID, *, now: datetime | None = None) -> Refund:
    """Test mode's payout: the claimed test refund COMPLETED at once by a simulated transfer of
    its ``payout_amount``, whose transaction ``test_tx_…`` no chain transfer can have. Raises
    PayoutConflict (409) for a live refund (only a chain transfer pays it) and for one not
    awaiting a payout."""
    refund = transitions.lock(session, refund_id)
    if not refund.test_mode:
        raise PayoutConflict("a live refund is completed by its payout on chain, never by a simulation")
    _must_await(refund)
    tx_hash = "test_tx_" + secrets.token_hex(16)
    payout = Payout(
        refund.network.upper(),
        tx_hash,
        0,  # pragma: no mutate (the place and recipient only make its ref; tx_hash is unique)
        refund.token,
        refund.address or "",  # pragma: no mutate (as above)
        payout_units(refund),
        None,
        None,
        0,
    )
    return complete(session, refund, payout, now)


def _is_native(refund: Refund) -> bool:
    from kassa_common.chains.networks import shipped

    network = shipped().get(refund.network)
    token = network.token(refund.token) if network else None
    return bool(token and token.native)


def _uuid(value: uuid.UUID | str) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise NotFound("no such refund") from None


def _must_await(refund: Refund) -> None:
    if refund.status != AWAITING_PAYMENT:
        why = {
            "AWAITING_ADDRESS": "the customer has not claimed it yet (no address to pay)",
            "COMPLETED": f"it is already completed by {refund.transaction_hash}",
        }.get(refund.status, f"it is {refund.status}")
        raise PayoutConflict(f"the refund cannot be completed: {why}")


def _lock_with_neighbours(session: Session, refund: Refund) -> Refund:
    """Lock the refund with every refund claimed to the same address on its network, in the
    order the settler locks them (``_lock``), so the two never wait for each other in a
    cycle; the refund, fresh."""
    rows = session.scalars(
        sa.select(Refund)
        .where(Refund.network == refund.network, sa.func.lower(Refund.address) == (refund.address or "").lower())
        .order_by(Refund.claimed_at, Refund.created_at, Refund.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    return next(r for r in rows if r.id == refund.id)


def _used_by_others(session: Session, refund: Refund, refs: list[str]) -> dict[str, str]:
    """Which of ``refs`` pay another refund already (a COMPLETED one, or one whose payout is
    seen and waits for confirmations): ref -> that refund's id. A seen payout the watcher
    gave another refund claimed to the same address goes to this one instead, as the
    merchant says; a completed one stays where it is."""
    rows = session.scalars(
        sa.select(Refund)
        .where(Refund.network == refund.network, Refund.transfer_ref.in_(refs), Refund.id != refund.id)
        .with_for_update()
        .execution_options(populate_existing=True)  # pragma: no mutate (_lock_with_neighbours refreshed them)
    ).all()
    used: dict[str, str] = {}
    for other in rows:
        if other.status == AWAITING_PAYMENT:
            _forget(other, utcnow())
            session.flush()
        else:
            used[str(other.transfer_ref)] = str(other.id)
    return used
