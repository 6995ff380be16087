"""Chain watcher state: a cursor per network and the recently scanned blocks.

Revision ID: 0003
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chain_cursors",
        sa.Column("network", sa.String(length=32), nullable=False),
        sa.Column("block_number", sa.BigInteger(), nullable=False),
        sa.Column("block_hash", sa.String(length=100), nullable=True),
        sa.Column("confirmed_through", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("network"),
    )
    op.create_table(
        "chain_blocks",
        sa.Column("network", sa.String(length=32), nullable=False),
        sa.Column("number", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(length=100), nullable=False),
        sa.Column("parent_hash", sa.String(length=100), nullable=False),
        sa.Column("transfers", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.PrimaryKeyConstraint("network", "number"),
    )


def downgrade() -> None:
    op.drop_table("chain_blocks")
    op.drop_table("chain_cursors")
