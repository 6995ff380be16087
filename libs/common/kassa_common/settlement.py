"""Settlement: what a transfer reported by a chain watcher (or simulated in test mode)
does to its payment. Every status change goes through the state machine.

Transfer messages (routing key ``chain.transfer.seen|confirmed|orphaned``)::

    {"network": "BASE", "tx_hash": "0x..", "log_index": 3, "token": "USDC", "to": "0x..",
     "amount_units": "1000000", "block_number": 123, "block_hash": "0x..", "confirmations": 1}

Amounts are exact integers in the token's base units. A transfer is counted only if it
is the payment's own token on the payment's network; otherwise it is recorded, not counted.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common import payments as sm
from kassa_common.models import Merchant, Payment, Transfer
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.settlement")
SEEN, CONFIRMED, ORPHANED = "SEEN", "CONFIRMED", "ORPHANED"
KINDS = {"chain.transfer.seen": SEEN, "chain.transfer.confirmed": CONFIRMED, "chain.transfer.orphaned": ORPHANED}


@dataclass(frozen=True)
class TransferReport:
    kind: str  # SEEN | CONFIRMED | ORPHANED
    network: str
    tx_hash: str
    log_index: int
    token: str
    to: str
    amount_units: int
    block_number: int | None = None
    block_hash: str | None = None
    confirmations: int = 0

    @classmethod
    def from_message(cls, routing_key: str, body: dict[str, Any]) -> "TransferReport":
        return cls(
            kind=KINDS[routing_key], network=str(body["network"]).upper(), tx_hash=str(body["tx_hash"]),
            log_index=int(body["log_index"]), token=str(body["token"]).upper(), to=str(body["to"]),
            amount_units=int(body["amount_units"]), block_number=body.get("block_number"),
            block_hash=body.get("block_hash"), confirmations=int(body.get("confirmations") or 0),
        )


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
            amount_units=r.amount_units, status=r.kind, counted=counted, block_number=r.block_number,
            block_hash=r.block_hash, confirmations=r.confirmations, late=payment.status not in sm.OPEN,
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
    transfer.status = r.kind
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
    if r.kind == SEEN:
        if payment.status in sm.OPEN:
            if before is None:
                return sm.apply(session, payment.id, "detect", confirmations=r.confirmations, transaction_hash=r.tx_hash)
            payment.confirmations = r.confirmations
        return payment
    if r.kind == ORPHANED or before == CONFIRMED:
        return payment
    return _count_confirmed(session, payment, transfer)


def _count_confirmed(session: Session, payment: Payment, transfer: Transfer) -> Payment:
    received = confirmed_total(session, payment.id)
    changes = {"amount_received_units": received, "confirmations": transfer.confirmations,
               "transaction_hash": transfer.tx_hash}
    if payment.status not in sm.OPEN:
        if payment.status == sm.COMPLETED:  # paid again after completion: show the surplus
            payment.amount_received_units = received
            return payment
        return sm.apply(session, payment.id, "record_late_payment", **changes)
    due = Decimal(int(payment.crypto_amount_units))
    tolerance = _tolerance(session, payment)
    if received >= due * (1 - tolerance):
        return sm.apply(session, payment.id, "complete", **changes)
    return sm.apply(session, payment.id, "partially_pay", **changes)


def _tolerance(session: Session, payment: Payment) -> Decimal:
    return session.scalar(sa.select(Merchant.underpayment_tolerance).where(Merchant.id == payment.merchant_id)) or Decimal(0)
