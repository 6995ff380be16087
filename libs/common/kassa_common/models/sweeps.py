"""Sweeps of forwarder deposits: the sweeper's transactions, the deposits held out of its
batches, and what each confirmed sweep moved (written only by ``kassa_common.sweeps``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class Sweep(Base):
    """One sweeper transaction: ``flushMany`` over a batch of forwarder deposits of a network.

    Written before it is broadcast (the signed bytes of every attempt are kept, so a crash
    or a node that forgot it only means broadcasting it again), followed until mined
    and confirmed (or failed), then costed: gas used times the effective gas price.
    ``deposits`` is the plan (payment, address, settlement, salt, tokens listed).
    """

    __tablename__ = "sweeps"
    id: Mapped[uuid.UUID] = uuid_pk()
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    sender: Mapped[str] = mapped_column(sa.String(42), nullable=False)
    nonce: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # PENDING | MINED | CONFIRMED | FAILED
    tx_hash: Mapped[str] = mapped_column(sa.String(66), nullable=False)  # the latest attempt, or the mined one
    attempts: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False, server_default="[]")
    deposits: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False, server_default="[]")
    deposit_count: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    gas_limit: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    gas_used: Mapped[int | None] = mapped_column(sa.BigInteger)
    effective_gas_price: Mapped[Decimal | None] = mapped_column(sa.Numeric(78, 0))
    cost_units: Mapped[Decimal | None] = mapped_column(sa.Numeric(78, 0))  # in the native coin's base units
    cost_usd: Mapped[Decimal | None] = mapped_column(sa.Numeric(18, 2))
    block_number: Mapped[int | None] = mapped_column(sa.BigInteger)
    error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    confirmed_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    __table_args__ = (
        sa.Index("sweeps_in_flight", "network", "nonce", postgresql_where=sa.text("status IN ('PENDING','MINED')")),
        sa.Index("sweeps_recent", sa.text("created_at DESC")),
        sa.Index("sweeps_spending", "network", "sender", "created_at"),
    )


class SweepHold(Base):
    """A forwarder deposit the sweeper does not put in a batch with others, on one network.

    ``SOLO``: it is swept on its own next: it was in a batch that reverted on chain, or the
    operator released it (``kassa sweep --retry-held``). ``HELD``: it is not swept at all
    until the operator releases it: its flush failed on its own (reverted, or made
    estimation fail), or a confirmed sweep left some of its funds in it. ``reason`` says
    why, ``held`` what it held then (symbol -> base units), ``sweep_id`` the sweep that
    showed it. A deposit swept in full on its own is free again: the row goes.
    """

    __tablename__ = "sweep_holds"
    payment_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("payments.id", ondelete="CASCADE"), primary_key=True)
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    status: Mapped[str] = mapped_column(sa.String(8), nullable=False)  # SOLO | HELD
    reason: Mapped[str] = mapped_column(sa.Text, nullable=False)
    held: Mapped[dict[str, str]] = mapped_column(JSONB, nullable=False, server_default="{}")
    sweep_id: Mapped[uuid.UUID | None] = mapped_column(sa.ForeignKey("sweeps.id", ondelete="SET NULL"))
    times_held: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    released_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))  # by the operator
    __table_args__ = (sa.Index("sweep_holds_network", "network", "status"),)


class SweepItem(Base):
    """What one confirmed sweep moved from one payment's deposit, per token."""

    __tablename__ = "sweep_items"
    sweep_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True)
    payment_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("payments.id", ondelete="CASCADE"), primary_key=True)
    token: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    amount_units: Mapped[Decimal] = mapped_column(sa.Numeric(78, 0), nullable=False)
    __table_args__ = (sa.Index("sweep_items_payment", "payment_id"),)
