"""Settlement: what a transfer report (``messages.TransferReport``, from a chain watcher or
test mode) does to the payment whose address it paid.

The report is recorded as a row of ``transfers`` (one per transfer, whatever how often
it is reported); a transfer counts only if it is the payment's own token on the
payment's network, otherwise it is recorded and never counted. Every change to the
payment goes through ``transitions.apply``; the state machine picks what a confirmed
transfer does (``settlement_trigger``).
"""
from __future__ import annotations

import logging
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.messages import TransferReport, TransferStatus
from kassa_common.models import Merchant, Payment, Transfer
from kassa_common.payments.transitions import OPEN, Trigger, apply, settlement_trigger
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.settlement")
SEEN, CONFIRMED, ORPHANED = TransferStatus


def payment_for_address(session: Session, address: str) -> Payment | None:
    """The payment that owns this receiving address, locked (addresses are unique)."""
    cond = sa.func.lower(Payment.address) == address.lower() if address.startswith("0x") else Payment.address == address
    return session.scalars(
        sa.select(Payment).where(cond).with_for_update().execution_options(populate_existing=True)
    ).first()


def _upsert_transfer(session: Session, payment: Payment, r: TransferReport) -> tuple[Transfer, str | None]:
    """Record the report; return the transfer and its status before this report (None if new)."""
    counted = r.network == payment.network and r.token == payment.token
    now = utcnow()
    inserted = session.execute(
        pg_insert(Transfer).values(
            payment_id=payment.id, network=r.network, tx_hash=r.tx_hash, log_index=r.log_index, token=r.token,
            amount_units=r.amount_units, status=r.status, counted=counted, block_number=r.block_number,
            block_hash=r.block_hash, confirmations=r.confirmations, late=payment.status not in OPEN,
            sweep_due=payment.settlement_address is not None and not payment.test_mode,  # a forwarder deposit
            created_at=now, updated_at=now,
        ).on_conflict_do_nothing().returning(Transfer.id)
    ).first()
    transfer = session.scalars(
        sa.select(Transfer).where(Transfer.network == r.network, Transfer.tx_hash == r.tx_hash,
                                  Transfer.log_index == r.log_index).with_for_update()
        .execution_options(populate_existing=True)
    ).one()
    if inserted:
        return transfer, None
    before = transfer.status
    if before == CONFIRMED:  # final: a confirmed transfer is never orphaned or re-counted
        return transfer, before
    transfer.status = r.status
    transfer.confirmations = r.confirmations
    transfer.block_number, transfer.block_hash = r.block_number, r.block_hash
    transfer.updated_at = now
    session.flush()
    return transfer, before


def confirmed_total(session: Session, payment_id) -> int:
    total = session.scalar(
        sa.select(sa.func.coalesce(sa.func.sum(Transfer.amount_units), 0))
        .where(Transfer.payment_id == payment_id, Transfer.counted, Transfer.status == CONFIRMED)
    )
    return int(total)


def settle(session: Session, r: TransferReport) -> Payment | None:
    """Apply one transfer report to its payment. Idempotent for the same report."""
    payment = payment_for_address(session, r.to)
    if payment is None:
        log.info("transfer %s:%s to %s matches no payment", r.tx_hash, r.log_index, r.to)
        return None
    transfer, before = _upsert_transfer(session, payment, r)
    if not transfer.counted:
        return payment  # recorded, never counted (another token or network)
    if r.status == SEEN:
        if payment.status not in OPEN:
            return payment
        if before is None:
            return apply(session, payment.id, Trigger.DETECT, confirmations=r.confirmations, transaction_hash=r.tx_hash)
        return apply(session, payment.id, Trigger.OBSERVE, confirmations=r.confirmations)
    if r.status == ORPHANED or before == CONFIRMED:
        return payment
    return _count_confirmed(session, payment, transfer)


def _count_confirmed(session: Session, payment: Payment, transfer: Transfer) -> Payment:
    received = confirmed_total(session, payment.id)
    trigger = settlement_trigger(payment.status, received, int(payment.crypto_amount_units), _tolerance(session, payment))
    if trigger == Trigger.RECORD_OVERPAYMENT:  # paid again after completion: show the surplus
        return apply(session, payment.id, trigger, amount_received_units=received)
    return apply(session, payment.id, trigger, amount_received_units=received, confirmations=transfer.confirmations,
                 transaction_hash=transfer.tx_hash)


def _tolerance(session: Session, payment: Payment) -> Decimal:
    return session.scalar(sa.select(Merchant.underpayment_tolerance).where(Merchant.id == payment.merchant_id)) or Decimal(0)
