"""Chain watcher: unconfirmed transfers it reported seen, kept across restarts.

Revision ID: 0010
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chain_mempool_transfers",
        sa.Column("network", sa.String(length=32), nullable=False),
        sa.Column("tx_hash", sa.String(length=100), nullable=False),
        sa.Column("log_index", sa.Integer(), nullable=False),
        sa.Column("transfer", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("misses", sa.Integer(), server_default="0", nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("network", "tx_hash", "log_index"),
    )


def downgrade() -> None:
    op.drop_table("chain_mempool_transfers")
