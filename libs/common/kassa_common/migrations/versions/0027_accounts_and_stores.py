"""Accounts and stores (DESIGN §14): a person signs in (an account), money belongs to a store.

The ``merchants`` table stays as the store, with the same ids, so every key, payment,
refund, URL and ``merchant_id`` keeps pointing where it did. Each merchant's login (email,
password hash, two-factor secret and recovery codes) moves to a new ``accounts`` row with
the merchant's own id, and ``store_members`` makes that account the store's owner. The
dashboard's logins now belong to the account (``dashboard_sessions.account_id``, the same
values, so a browser signed in before the upgrade stays signed in). ``merchants.email``
stays as the store's contact address (where its notices go), no longer unique: one
account may own several stores.

Revision ID: 0027
Revises: 0026
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_LOGIN_COLUMNS = "password_hash, totp_secret, totp_enabled_at, totp_last_step, recovery_code_hashes"


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("password_hash", sa.Text()),
        sa.Column("totp_secret", sa.String(64)),
        sa.Column("totp_enabled_at", sa.DateTime(timezone=True)),
        sa.Column("totp_last_step", sa.BigInteger()),
        sa.Column("recovery_code_hashes", ARRAY(sa.Text()), nullable=False, server_default="{}"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_index("accounts_email_key", "accounts", [sa.text("lower(email)")], unique=True)
    op.create_table(
        "store_members",
        sa.Column("store_id", sa.Uuid(), sa.ForeignKey("merchants.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("role IN ('owner', 'manager', 'employee', 'viewer')", name="store_members_role"),
    )
    op.create_index("store_members_account", "store_members", ["account_id"])
    op.execute(
        f"INSERT INTO accounts (id, email, {_LOGIN_COLUMNS}, created_at) "
        f"SELECT id, email, {_LOGIN_COLUMNS}, created_at FROM merchants"
    )
    op.execute(
        "INSERT INTO store_members (store_id, account_id, role, created_at) "
        "SELECT id, id, 'owner', created_at FROM merchants"
    )
    op.drop_constraint("dashboard_sessions_merchant_id_fkey", "dashboard_sessions", type_="foreignkey")
    op.drop_index("dashboard_sessions_merchant", table_name="dashboard_sessions")
    op.alter_column("dashboard_sessions", "merchant_id", new_column_name="account_id")
    op.create_foreign_key(
        "dashboard_sessions_account_id_fkey", "dashboard_sessions", "accounts", ["account_id"], ["id"], ondelete="CASCADE"
    )
    op.create_index("dashboard_sessions_account", "dashboard_sessions", ["account_id", "last_seen_at"])
    for column in _LOGIN_COLUMNS.split(", "):
        op.drop_column("merchants", column)
    op.drop_index("merchants_email_key", table_name="merchants")
    op.create_index("merchants_email", "merchants", [sa.text("lower(email)")])


def downgrade() -> None:
    """Back to one login per merchant: each store takes its first owner's login (a store
    without an owner keeps none); members and stores beyond that are not kept apart."""
    op.drop_index("merchants_email", table_name="merchants")
    op.add_column("merchants", sa.Column("password_hash", sa.Text()))
    op.add_column("merchants", sa.Column("totp_secret", sa.String(64)))
    op.add_column("merchants", sa.Column("totp_enabled_at", sa.DateTime(timezone=True)))
    op.add_column("merchants", sa.Column("totp_last_step", sa.BigInteger()))
    op.add_column(
        "merchants", sa.Column("recovery_code_hashes", ARRAY(sa.Text()), nullable=False, server_default="{}")
    )
    op.execute(
        "UPDATE merchants m SET password_hash = a.password_hash, totp_secret = a.totp_secret, "
        "totp_enabled_at = a.totp_enabled_at, totp_last_step = a.totp_last_step, "
        "recovery_code_hashes = a.recovery_code_hashes "
        "FROM accounts a WHERE a.id = (SELECT sm.account_id FROM store_members sm "
        "WHERE sm.store_id = m.id AND sm.role = 'owner' ORDER BY sm.created_at, sm.account_id LIMIT 1)"
    )
    op.create_index("merchants_email_key", "merchants", [sa.text("lower(email)")], unique=True)
    op.drop_index("dashboard_sessions_account", table_name="dashboard_sessions")
    op.drop_constraint("dashboard_sessions_account_id_fkey", "dashboard_sessions", type_="foreignkey")
    op.execute("DELETE FROM dashboard_sessions WHERE account_id NOT IN (SELECT id FROM merchants)")
    op.alter_column("dashboard_sessions", "account_id", new_column_name="merchant_id")
    op.create_foreign_key(
        "dashboard_sessions_merchant_id_fkey",
        "dashboard_sessions",
        "merchants",
        ["merchant_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index("dashboard_sessions_merchant", "dashboard_sessions", ["merchant_id", "last_seen_at"])
    op.drop_table("store_members")
    op.drop_table("accounts")
