"""Guarded wallet changes and webhook endpoints disabled after days of failures.

``wallet_changes`` holds a live wallet change asked for in the dashboard until it applies
(``applies_at``, after ``WALLET_CHANGE_HOLD_HOURS``) or is canceled (the emailed link:
``cancel_token_hash`` is the SHA-256 of its one-time token). ``webhook_endpoints`` gains
``failing_since`` (the first failed attempt of the current streak, cleared by a success
or by re-enabling) and ``disabled_at`` (disabled by Kassa after 3 days of failures).

Revision ID: 0023
Revises: 0022
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wallet_changes",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True),
        sa.Column("merchant_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("chain", sa.String(length=16), nullable=False),
        sa.Column("xpub", sa.Text(), nullable=True),
        sa.Column("settlement_address", sa.String(length=42), nullable=True),
        sa.Column("cancel_token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.Column("applies_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("num_nonnulls(xpub, settlement_address) = 1", name="wallet_changes_xpub_or_settlement"),
    )
    op.create_index(
        "wallet_changes_due",
        "wallet_changes",
        ["applies_at"],
        postgresql_where=sa.text("applied_at IS NULL AND canceled_at IS NULL"),
    )
    op.create_index("wallet_changes_merchant", "wallet_changes", ["merchant_id", "mode"])
    op.add_column("webhook_endpoints", sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True))
    op.add_column("webhook_endpoints", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("webhook_endpoints", "disabled_at")
    op.drop_column("webhook_endpoints", "failing_since")
    op.drop_index("wallet_changes_merchant", table_name="wallet_changes")
    op.drop_index("wallet_changes_due", table_name="wallet_changes", postgresql_where=sa.text("applied_at IS NULL AND canceled_at IS NULL"))
    op.drop_table("wallet_changes")
