"""The payment's tables: the payment, the transfers to its address, and the idempotency key
of each create (payments and refunds)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class Payment(Base):
    __tablename__ = "payments"
    id: Mapped[uuid.UUID] = uuid_pk()
    short_id: Mapped[str] = mapped_column(sa.String(16), nullable=False, unique=True)
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    status: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    amount: Mapped[Decimal] = mapped_column(sa.Numeric(18, 2), nullable=False)
    token: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    decimals: Mapped[int] = mapped_column(sa.SmallInteger, nullable=False)
    address: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    checkout_url: Mapped[str] = mapped_column(sa.Text, nullable=False)
    derivation_index: Mapped[int | None] = mapped_column(sa.BigInteger)  # None: a forwarder deposit
    crypto_amount_units: Mapped[Decimal] = mapped_column(sa.Numeric(78, 0), nullable=False)
    amount_received_units: Mapped[Decimal] = mapped_column(sa.Numeric(78, 0), nullable=False, server_default="0")
    exchange_rate: Mapped[Decimal] = mapped_column(sa.Numeric(36, 18), nullable=False)  # one token in ``currency``
    # Pricing (kassa_common.pricing): ``amount`` is in ``currency``; where the rate came from,
    # until when it holds (None on payments older than the lock: their lifetime), the spread
    # it includes, and the rate funds arriving after the lock were last valued at.
    currency: Mapped[str] = mapped_column(sa.String(3), nullable=False, server_default="USD")
    rate_source: Mapped[str | None] = mapped_column(sa.Text)
    rate_locked_until: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    rate_spread_pct: Mapped[Decimal] = mapped_column(sa.Numeric(4, 2), nullable=False, server_default="0")
    arrival_exchange_rate: Mapped[Decimal | None] = mapped_column(sa.Numeric(36, 18))
    confirmations: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    required_confirmations: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    transaction_hash: Mapped[str | None] = mapped_column(sa.String(100))
    # The height the network's watcher had scanned to at creation: no transfer to this
    # address can be older, so a late address is backfilled from here (None: test mode, no watcher yet).
    created_block: Mapped[int | None] = mapped_column(sa.BigInteger)
    # Where every watcher stood (its cursor's height, by network name) when the payment was
    # created: an EVM address is watched on the other EVM networks too (wrong network), and
    # each of their watchers backfills it from its own height here, never from another
    # network's. Empty in test mode; a network missing here had no watcher running yet.
    watch_points: Mapped[dict[str, int]] = mapped_column(JSONB, nullable=False, default=dict, server_default="{}")
    customer_email: Mapped[str | None] = mapped_column(sa.String(320))
    customer_name: Mapped[str | None] = mapped_column(sa.String(200))
    redirect_url: Mapped[str | None] = mapped_column(sa.Text)
    cancel_url: Mapped[str | None] = mapped_column(sa.Text)
    product_id: Mapped[uuid.UUID | None] = mapped_column(sa.ForeignKey("products.id", ondelete="SET NULL"))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False, server_default="{}")
    expires_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    completed_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # Test mode only: complete automatically after TEST_MODE_COMPLETE_SECONDS unless the tester
    # chose otherwise on the checkout page; set once the simulated transfer is queued.
    test_auto_complete: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    test_simulated_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # Forwarder settlement: ``address`` is a deposit that forwards only to ``settlement_address``
    # (its CREATE2 salt is ``deposit_salt``, 0x + 64 hex); the latest sweep that moved its funds.
    settlement_address: Mapped[str | None] = mapped_column(sa.String(42))
    deposit_salt: Mapped[str | None] = mapped_column(sa.String(66))
    swept_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    sweep_tx_hash: Mapped[str | None] = mapped_column(sa.String(66))
    # Supported tokens that reached ``address`` on another EVM network (not counted; see
    # ``payments.settle``): one entry per confirmed transfer, as ``PaymentOut.wrong_network``.
    wrong_network: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, nullable=False, default=list, server_default="[]"
    )

    __table_args__ = (
        sa.Index(
            "payments_test_due",
            "created_at",
            postgresql_where=sa.text("test_mode AND status = 'PENDING' AND test_simulated_at IS NULL"),
        ),
        sa.Index("payments_merchant_list", "merchant_id", "test_mode", sa.text("created_at DESC"), "id"),
        # Addresses are case-insensitive (EIP-55, bech32): unique as such, and looked up so.
        sa.Index("payments_address_key", sa.func.lower(address), unique=True),
        sa.Index(
            "payments_open_expiry", "expires_at", postgresql_where=sa.text("status IN ('PENDING','PARTIALLY_PAID')")
        ),
    )


class Transfer(Base):
    """A transfer to a payment's address, as the chain watcher reported it."""

    __tablename__ = "transfers"
    id: Mapped[uuid.UUID] = uuid_pk()
    payment_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("payments.id", ondelete="CASCADE"), nullable=False)
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    tx_hash: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    log_index: Mapped[int] = mapped_column(
        sa.Integer, nullable=False
    )  # log index (EVM) or vout (Bitcoin); -1 native EVM
    # Its place inside its transaction (what a reorg cannot change): the rank of an ERC-20 log
    # among the transaction's logs to this address, -1 native EVM, -2, -3, … the transaction's
    # internal native credits to this address, the vout for Bitcoin.
    position: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    token: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    amount_units: Mapped[Decimal] = mapped_column(sa.Numeric(78, 0), nullable=False)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # SEEN | CONFIRMED | ORPHANED | REORGED
    counted: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)  # the payment's own token
    late: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    # the rate of its arrival (one token in the payment's currency) when it arrived after the
    # payment's rate lock: it is valued at that rate for the completion check
    exchange_rate: Mapped[Decimal | None] = mapped_column(sa.Numeric(36, 18))
    block_number: Mapped[int | None] = mapped_column(sa.BigInteger)
    block_hash: Mapped[str | None] = mapped_column(sa.String(100))
    confirmations: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    # Forwarder deposits: a confirmed transfer is due for a sweep until one moves it;
    # ``sweep_id`` is the sweep that took it on (released again if that sweep fails).
    sweep_due: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    sweep_id: Mapped[uuid.UUID | None] = mapped_column(sa.ForeignKey("sweeps.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    __table_args__ = (
        # the payment stands for the recipient (one address each): one transaction paying
        # several payments is one row for each
        sa.UniqueConstraint("network", "tx_hash", "payment_id", "position", name="transfers_identity"),
        sa.Index("transfers_payment", "payment_id"),
        sa.Index(
            "transfers_sweep_due",
            "network",
            "created_at",
            postgresql_where=sa.text("sweep_due AND status = 'CONFIRMED'"),
        ),
    )


class IdempotencyKey(Base):
    """One row per (merchant, mode, key): written in the same transaction as the payment
    (or the refund) it made."""

    __tablename__ = "idempotency_keys"
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), primary_key=True)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    response_status: Mapped[int | None] = mapped_column(sa.SmallInteger)
    payment_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    refund_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))  # POST /payments/:id/refunds
    created_at: Mapped[datetime] = created()
    __table_args__ = (sa.Index("idempotency_keys_retention", "created_at"),)
