"""The merchant account's tables (DESIGN §14): the account (a person who signs in), the store
(the ``merchants`` table: what money belongs to), the store's members, its API keys, dashboard
sessions, wallets and the wallet changes on hold."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class Merchant(Base):
    """A store: what money belongs to (wallets, keys, products, webhooks, payments, refunds,
    settings). The table keeps its historical name, so every ``merchant_id`` in the schema is
    a store's id. It may use the API once activated, not banned, with a business name (its
    name). Who may open it is ``StoreMember``; ``email`` is where its notices go (its first
    owner's address when it was made)."""

    __tablename__ = "merchants"
    id: Mapped[uuid.UUID] = uuid_pk()
    email: Mapped[str] = mapped_column(sa.String(320), nullable=False)
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
    # every member must have two-factor sign-in on to open the store (kassa_common.accounts.stores)
    require_2fa: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.false())
    created_at: Mapped[datetime] = created()

    __table_args__ = (sa.Index("merchants_email", sa.func.lower(email)),)


class Account(Base):
    """A person who signs in to the dashboard: one email, one password, one second factor,
    and the stores it is a member of. Migrated merchants kept their id as their account's."""

    __tablename__ = "accounts"
    id: Mapped[uuid.UUID] = uuid_pk()
    email: Mapped[str] = mapped_column(sa.String(320), nullable=False)
    password_hash: Mapped[str | None] = mapped_column(sa.Text)
    # two-factor sign-in (kassa_common.accounts.twofactor): on once ``totp_enabled_at`` is set
    totp_secret: Mapped[str | None] = mapped_column(sa.String(64))
    totp_enabled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    totp_last_step: Mapped[int | None] = mapped_column(sa.BigInteger)  # the last code's time step (no replay)
    recovery_code_hashes: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False, server_default="{}")
    created_at: Mapped[datetime] = created()

    __table_args__ = (sa.Index("accounts_email_key", sa.func.lower(email), unique=True),)


ROLES = ("owner", "manager", "employee", "viewer")  # most to least (kassa_common.accounts.stores)


class StoreMember(Base):
    """An account's place in a store, with its role."""

    __tablename__ = "store_members"
    store_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), primary_key=True)
    account_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    created_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.CheckConstraint("role IN ('owner', 'manager', 'employee', 'viewer')", name="store_members_role"),
        sa.Index("store_members_account", "account_id"),
    )


class DashboardSession(Base):
    """An account's dashboard login, kept on the server: the browser's cookie holds only its random id
    (this row stores the id's SHA-256). Logout, a password change and the settings page's
    revoke button set ``revoked_at``; a revoked or expired row opens nothing."""

    __tablename__ = "dashboard_sessions"
    id_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    account_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False)
    user_agent: Mapped[str | None] = mapped_column(sa.String(300))
    address: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = created()
    last_seen_at: Mapped[datetime] = created()
    expires_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    __table_args__ = (sa.Index("dashboard_sessions_account", "account_id", "last_seen_at"),)


class ApiKey(Base):
    __tablename__ = "api_keys"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str | None] = mapped_column(sa.String(100))
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)  # test | live
    prefix: Mapped[str] = mapped_column(sa.String(24), nullable=False)  # shown in lists
    key_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    scopes: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False)
    created_at: Mapped[datetime] = created()
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # the last authenticated request with it, to the minute (kassa_api.auth.LAST_USED_GRANULARITY)
    last_used_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


class Wallet(Base):
    """Where a merchant's payments of one chain family are paid to, per mode: an extended
    public key (each payment gets the next address of it) or, EVM only, a forwarder
    settlement address (each payment gets a deposit address that forwards only there)."""

    __tablename__ = "wallets"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)
    chain: Mapped[str] = mapped_column(sa.String(16), nullable=False)  # evm | bitcoin
    xpub: Mapped[str | None] = mapped_column(sa.Text)
    settlement_address: Mapped[str | None] = mapped_column(sa.String(42))  # EIP-55
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "mode", "chain"),
        sa.CheckConstraint("num_nonnulls(xpub, settlement_address) = 1", name="wallets_xpub_or_settlement"),
    )


class WalletChange(Base):
    """A live wallet change on hold (DESIGN §10): applied by the expirer at ``applies_at``
    unless canceled first (the emailed link carries the token hashed here)."""

    __tablename__ = "wallet_changes"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    mode: Mapped[str] = mapped_column(sa.String(4), nullable=False)
    chain: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    xpub: Mapped[str | None] = mapped_column(sa.Text)
    settlement_address: Mapped[str | None] = mapped_column(sa.String(42))
    cancel_token_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    created_at: Mapped[datetime] = created()
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


class StoreInvitation(Base):
    """An owner's invitation of an email to a store with a role (DESIGN §14): nothing happens
    until the invitee accepts it through the emailed link (signing in, or up, with that email);
    it expires at ``expires_at`` and an owner may revoke it first. Only the link's SHA-256 is kept."""

    __tablename__ = "store_invitations"
    id: Mapped[uuid.UUID] = uuid_pk()
    store_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    email: Mapped[str] = mapped_column(sa.String(320), nullable=False)
    role: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    token_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    invited_by: Mapped[uuid.UUID | None] = mapped_column(sa.ForeignKey("accounts.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created()
    expires_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    accepted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    __table_args__ = (
        sa.CheckConstraint("role IN ('owner', 'manager', 'employee', 'viewer')", name="store_invitations_role"),
        sa.Index("store_invitations_store", "store_id", "created_at"),
    )
