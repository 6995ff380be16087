"""Refunds (DESIGN §8), paid by the merchant from their own wallet."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class Refund(Base):
    """A refund of a payment (DESIGN §8): a claim the merchant pays from their own wallet.

    Written only by ``kassa_common.refunds``. ``amount_units`` is in the payment's token
    (``decimals`` copied from it); the customer claims it with ``claim_token`` (the claim
    page), giving ``address``; ``claim_block`` is the network watcher's height at the claim
    (only later blocks pay it; None: test mode or no watcher yet). ``transfer_ref`` is the one
    transfer paying it ("<tx hash>:<log index or vout>"), unique per network."""

    __tablename__ = "refunds"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    payment_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("payments.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    status: Mapped[str] = mapped_column(sa.String(24), nullable=False)  # statuses.RefundStatus
    amount_units: Mapped[Decimal] = mapped_column(sa.Numeric(78, 0), nullable=False)
    token: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    decimals: Mapped[int] = mapped_column(sa.SmallInteger, nullable=False)
    reason: Mapped[str | None] = mapped_column(sa.Text)
    claim_token: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    address: Mapped[str | None] = mapped_column(sa.String(100))
    claimed_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    claim_block: Mapped[int | None] = mapped_column(sa.BigInteger)
    transaction_hash: Mapped[str | None] = mapped_column(sa.String(100))
    transfer_ref: Mapped[str | None] = mapped_column(sa.String(120))
    payout_units: Mapped[Decimal | None] = mapped_column(sa.Numeric(78, 0))
    payout_block_number: Mapped[int | None] = mapped_column(sa.BigInteger)
    payout_block_hash: Mapped[str | None] = mapped_column(sa.String(100))
    # 1-999 base units the merchant pays on top of the amount (``payout_amount``), set at the
    # claim: unique among open refunds claimed to one address on one network (DESIGN §8)
    payout_tag: Mapped[int | None] = mapped_column(sa.Integer)
    payout_from: Mapped[str | None] = mapped_column(sa.String(100))  # the payout's sender
    funds_reorged: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    confirmations: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    completed_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    canceled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    __table_args__ = (
        sa.CheckConstraint("amount_units > 0", name="refunds_amount_positive"),
        # one on-chain transfer pays at most one refund
        sa.Index(
            "refunds_transfer_ref",
            "network",
            "transfer_ref",
            unique=True,
            postgresql_where=sa.text("transfer_ref IS NOT NULL"),
        ),
        sa.Index("refunds_network_status", "network", "status"),
        sa.Index("refunds_address", sa.func.lower(address)),  # payouts match any case
        sa.Index("refunds_payment", "payment_id"),
        sa.Index("refunds_unclaimed_expiry", "expires_at", postgresql_where=sa.text("status = 'AWAITING_ADDRESS'")),
        sa.CheckConstraint("payout_tag BETWEEN 1 AND 999", name="refunds_payout_tag_range"),
        sa.Index(
            "refunds_open_payout_tag",
            "network",
            sa.func.lower(address),
            "payout_tag",
            unique=True,
            postgresql_where=sa.text("status = 'AWAITING_PAYMENT' AND payout_tag IS NOT NULL"),
        ),
    )
