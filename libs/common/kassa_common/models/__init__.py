"""SQLAlchemy models: the tables of Kassa (schema owned by the Alembic migrations)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NOW = sa.text("now()")


class Base(DeclarativeBase):
    pass


def _uuid_pk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)


def _created() -> Mapped[datetime]:
    return mapped_column(sa.DateTime(timezone=True), server_default=NOW, nullable=False)


class Merchant(Base):
    """An account. It may use the API once activated, not banned, with a business name."""

    __tablename__ = "merchants"
    id: Mapped[uuid.UUID] = _uuid_pk()
    email: Mapped[str] = mapped_column(sa.String(320), nullable=False)
    password_hash: Mapped[str | None] = mapped_column(sa.Text)
    business_name: Mapped[str | None] = mapped_column(sa.String(200))
    activated: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    banned: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    payment_lifetime_minutes: Mapped[int | None] = mapped_column(sa.Integer)
    underpayment_tolerance: Mapped[Decimal] = mapped_column(sa.Numeric(6, 5), nullable=False, server_default="0")
    # email the merchant about completed, partially paid and late payments (the notifier)
    notify_email: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    # pricing (kassa_common.pricing.terms): percent added to what customers pay, and how long a
    # quoted crypto amount holds (None: the payment's lifetime)
    rate_spread_pct: Mapped[Decimal] = mapped_column(sa.Numeric(4, 2), nullable=False, server_default="0")
    rate_lock_minutes: Mapped[int | None] = mapped_column(sa.Integer)
    # two-factor sign-in (kassa_common.twofactor): on once ``totp_enabled_at`` is set
    totp_secret: Mapped[str | None] = mapped_column(sa.String(64))
    totp_enabled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    totp_last_step: Mapped[int | None] = mapped_column(sa.BigInteger)  # the last code's time step (no replay)
    recovery_code_hashes: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False, server_default="{}")
    created_at: Mapped[datetime] = _created()

    __table_args__ = (sa.Index("merchants_email_key", sa.func.lower(email), unique=True),)


class DashboardSession(Base):
    """A dashboard login, kept on the server: the browser's cookie holds only its random id
    (this row stores the id's SHA-256). Logout, a password change and the settings page's
    revoke button set ``revoked_at``; a revoked or expired row opens nothing."""

    __tablename__ = "dashboard_sessions"
    id_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    user_agent: Mapped[str | None] = mapped_column(sa.String(300))
    address: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = _created()
    last_seen_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    __table_args__ = (sa.Index("dashboard_sessions_merchant", "merchant_id", "last_seen_at"),)


class ApiKey(Base):
    __tablename__ = "api_keys"
    id: Mapped[uuid.UUID] = _uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str | None] = mapped_column(sa.String(100))
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)  # test | live
    prefix: Mapped[str] = mapped_column(sa.String(24), nullable=False)  # shown in lists
    key_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    scopes: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False)
    created_at: Mapped[datetime] = _created()
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # the last authenticated request with it, to the minute (kassa_api.auth.LAST_USED_GRANULARITY)
    last_used_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


class Wallet(Base):
    """Where a merchant's payments of one chain family are paid to, per mode: an extended
    public key (each payment gets the next address of it) or, EVM only, a forwarder
    settlement address (each payment gets a deposit address that forwards only there)."""

    __tablename__ = "wallets"
    id: Mapped[uuid.UUID] = _uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)
    chain: Mapped[str] = mapped_column(sa.String(16), nullable=False)  # evm | bitcoin
    xpub: Mapped[str | None] = mapped_column(sa.Text)
    settlement_address: Mapped[str | None] = mapped_column(sa.String(42))  # EIP-55
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "mode", "chain"),
        sa.CheckConstraint("num_nonnulls(xpub, settlement_address) = 1", name="wallets_xpub_or_settlement"),
    )


class WalletChange(Base):
    """A live wallet change on hold (DESIGN §10): applied by the expirer at ``applies_at``
    unless canceled first (the emailed link carries the token hashed here)."""

    __tablename__ = "wallet_changes"
    id: Mapped[uuid.UUID] = _uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)
    chain: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    xpub: Mapped[str | None] = mapped_column(sa.Text)
    settlement_address: Mapped[str | None] = mapped_column(sa.String(42))
    cancel_token_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    created_at: Mapped[datetime] = _created()
    applies_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    applied_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    canceled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    __table_args__ = (
        sa.CheckConstraint("num_nonnulls(xpub, settlement_address) = 1", name="wallet_changes_xpub_or_settlement"),
        sa.Index(
            "wallet_changes_due", "applies_at", postgresql_where=sa.text("applied_at IS NULL AND canceled_at IS NULL")
        ),
        sa.Index("wallet_changes_merchant", "merchant_id", "mode"),
    )


class Product(Base):
    __tablename__ = "products"
    id: Mapped[uuid.UUID] = _uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    name: Mapped[str] = mapped_column(sa.String(200), nullable=False)
    description: Mapped[str | None] = mapped_column(sa.Text)
    price: Mapped[Decimal] = mapped_column(sa.Numeric(36, 18), nullable=False)
    currency_type: Mapped[str] = mapped_column(sa.String(6), nullable=False)  # FIAT | CRYPTO
    currency: Mapped[str] = mapped_column(sa.String(3), nullable=False, server_default="USD")  # of a FIAT price
    token: Mapped[str | None] = mapped_column(sa.String(16))
    network: Mapped[str | None] = mapped_column(sa.String(32))
    active: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    deleted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
    __table_args__ = (sa.Index("products_merchant_list", "merchant_id", "test_mode", sa.text("created_at DESC")),)


class Payment(Base):
    __tablename__ = "payments"
    id: Mapped[uuid.UUID] = _uuid_pk()
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
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
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


class Refund(Base):
    """A refund of a payment (DESIGN §8): a claim the merchant pays from their own wallet.

    Written only by ``kassa_common.refunds``. ``amount_units`` is in the payment's token
    (``decimals`` copied from it); the customer claims it with ``claim_token`` (the claim
    page), giving ``address``; ``claim_block`` is the network watcher's height at the claim
    (only later blocks pay it; None: test mode or no watcher yet). ``transfer_ref`` is the one
    transfer paying it ("<tx hash>:<log index or vout>"), unique per network."""

    __tablename__ = "refunds"
    id: Mapped[uuid.UUID] = _uuid_pk()
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
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
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
    created_at: Mapped[datetime] = _created()
    __table_args__ = (sa.Index("idempotency_keys_retention", "created_at"),)


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    id: Mapped[uuid.UUID] = _uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    url: Mapped[str] = mapped_column(sa.Text, nullable=False)
    events: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False)
    active: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    description: Mapped[str | None] = mapped_column(sa.String(500))
    secret: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    # after a rotation the old secret still signs (beside the new one) until this time
    previous_secret: Mapped[str | None] = mapped_column(sa.String(100))
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # the first failed attempt of the current streak (a success or re-enabling clears it)
    failing_since: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    disabled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))  # by Kassa: 3 days failing
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()


class Event(Base):
    """Outbox: a domain event written in the transaction of the change it describes."""

    __tablename__ = "events"
    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)  # evt_...
    type: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    payment_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = _created()
    published_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    __table_args__ = (
        sa.Index("events_unpublished", "created_at", postgresql_where=sa.text("published_at IS NULL")),
        sa.Index("events_payment", "payment_id", "created_at"),
        sa.Index("events_merchant_list", "merchant_id", "test_mode", sa.text("created_at DESC"), "id"),
        sa.Index("events_retention", "created_at"),
    )


class Transfer(Base):
    """A transfer to a payment's address, as the chain watcher reported it."""

    __tablename__ = "transfers"
    id: Mapped[uuid.UUID] = _uuid_pk()
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
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
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


class Sweep(Base):
    """One sweeper transaction: ``flushMany`` over a batch of forwarder deposits of a network.

    Written before it is broadcast (the signed bytes of every attempt are kept, so a crash
    or a node that forgot it only means broadcasting it again), followed until mined
    and confirmed (or failed), then costed: gas used times the effective gas price.
    ``deposits`` is the plan (payment, address, settlement, salt, tokens listed).
    """

    __tablename__ = "sweeps"
    id: Mapped[uuid.UUID] = _uuid_pk()
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
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
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
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
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


class WebhookDelivery(Base):
    """One event to one endpoint: created once (unique), attempted until it succeeds or gives up."""

    __tablename__ = "webhook_deliveries"
    id: Mapped[uuid.UUID] = _uuid_pk()
    endpoint_id: Mapped[uuid.UUID] = mapped_column(
        sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
    )
    event_id: Mapped[str] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False)
    event_type: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # PENDING | SUCCEEDED | FAILED
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    lease_until: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    last_status_code: Mapped[int | None] = mapped_column(sa.SmallInteger)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _created()
    __table_args__ = (
        sa.UniqueConstraint("event_id", "endpoint_id"),
        sa.Index("webhook_deliveries_due", "next_attempt_at", postgresql_where=sa.text("status = 'PENDING'")),
        sa.Index("webhook_deliveries_endpoint", "endpoint_id", sa.text("created_at DESC")),
        # the deliveries leased per endpoint (claims count their own in the sender since the limit is per process)
        sa.Index(
            "webhook_deliveries_leased",
            "endpoint_id",
            postgresql_where=sa.text("status = 'PENDING' AND lease_until IS NOT NULL"),
        ),
    )


class Notification(Base):
    """One email about one event (kind ``merchant`` or ``receipt``): written PENDING, once
    (unique), with the consumer's transaction; sent by the notifier, then SENT (or FAILED
    once the retry schedule gives up). ``lease_until``: a sender is sending it now."""

    __tablename__ = "notifications"
    id: Mapped[uuid.UUID] = _uuid_pk()
    event_id: Mapped[str] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    recipient: Mapped[str] = mapped_column(sa.String(320), nullable=False)
    subject: Mapped[str] = mapped_column(sa.Text, nullable=False)
    body_text: Mapped[str] = mapped_column(sa.Text, nullable=False)
    body_html: Mapped[str | None] = mapped_column(sa.Text)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # PENDING | SENT | FAILED
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False, server_default=NOW)
    lease_until: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    sent_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    __table_args__ = (
        sa.UniqueConstraint("event_id", "kind", name="notifications_event_kind"),
        sa.Index("notifications_due", "next_attempt_at", postgresql_where=sa.text("status = 'PENDING'")),
        # the email claim's turns per recipient domain: what was sent or is under way lately
        sa.Index("notifications_sent", "sent_at", postgresql_where=sa.text("sent_at IS NOT NULL")),
        sa.Index("notifications_leased", "lease_until", postgresql_where=sa.text("lease_until IS NOT NULL")),
    )


class DeliveryAttempt(Base):
    __tablename__ = "delivery_attempts"
    id: Mapped[uuid.UUID] = _uuid_pk()
    delivery_id: Mapped[uuid.UUID] = mapped_column(
        sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False
    )
    attempt: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    status_code: Mapped[int | None] = mapped_column(sa.SmallInteger)
    duration_ms: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    response_body: Mapped[str | None] = mapped_column(sa.Text)  # truncated
    error: Mapped[str | None] = mapped_column(sa.Text)
    next_retry_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    __table_args__ = (
        sa.Index("delivery_attempts_delivery", "delivery_id", "attempt"),
        sa.Index("delivery_attempts_retention", "created_at"),
    )


class ProcessedMessage(Base):
    """Consumer idempotency: a message id recorded in the transaction that handled it."""

    __tablename__ = "processed_messages"
    consumer: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    message_id: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    created_at: Mapped[datetime] = _created()
    __table_args__ = (sa.Index("processed_messages_retention", "created_at"),)


class ChainCursor(Base):
    """How far the chain watcher has followed one network.

    ``block_number``/``block_hash``: the last block scanned (the head of ``chain_blocks``);
    ``confirmed_through``: every transfer in blocks up to this height was published confirmed.
    """

    __tablename__ = "chain_cursors"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    block_number: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    block_hash: Mapped[str | None] = mapped_column(sa.String(100))
    confirmed_through: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    # When the watcher last read the tip and had every block up to it scanned and reported:
    # a payment expires only once this passed its ``expires_at``.
    scanned_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    updated_at: Mapped[datetime] = _created()


class ChainReport(Base):
    """A transfer report a chain watcher published, recorded right after the broker confirmed
    it: the settler has applied it once its message id is among its processed messages.
    Rows go once a watermark found them applied (``payments.watermark``)."""

    __tablename__ = "chain_reports"
    seq: Mapped[int] = mapped_column(sa.BigInteger, sa.Identity(), primary_key=True)
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    message_id: Mapped[str] = mapped_column(sa.String(100), nullable=False, unique=True)
    created_at: Mapped[datetime] = _created()
    __table_args__ = (sa.Index("chain_reports_network", "network", "seq"),)


class SettledWatermark(Base):
    """How far the settler has applied what a network's watcher reported: ``settled_at`` is
    a time at which the watcher had read the tip with every block up to it reported, and every
    one of those reports is applied. A live payment expires only once this passed its
    ``expires_at`` (``payments.watermark``, ``payments.expire``)."""

    __tablename__ = "settled_watermarks"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    settled_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = _created()


class ChainBlock(Base):
    """A recently scanned block: its hash and parent (reorg detection) and the transfers to
    watched addresses found in it (so an orphaned block's transfers can be reported)."""

    __tablename__ = "chain_blocks"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    number: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    hash: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    parent_hash: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    transfers: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False, server_default="[]")


class ChainMempoolTransfer(Base):
    """A transfer the watcher saw unconfirmed (Bitcoin's mempool) and reported seen: kept
    until it is mined or gone, so that a restart still reports a dropped or replaced one
    as orphaned. ``misses``: consecutive looks at the mempool that did not find it."""

    __tablename__ = "chain_mempool_transfers"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tx_hash: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    log_index: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    transfer: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    misses: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    # this stay in the mempool: a transaction dropped and broadcast again is a new sighting,
    # whose reports the settler must not take for the earlier one's (``mempool.py``)
    sighting: Mapped[str] = mapped_column(sa.String(32), nullable=False, server_default="")
    seen_at: Mapped[datetime] = _created()
