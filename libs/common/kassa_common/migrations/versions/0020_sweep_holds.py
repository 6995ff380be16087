"""Sweep holds: forwarder deposits the sweeper isolates from its batches.

A deposit whose flush failed (reverted on chain, made gas estimation fail, or left funds
behind in a confirmed sweep) is held with its reason until the operator releases it; a
deposit of a batch that reverted is swept on its own next (SOLO). The sweeps of the last
hour are summed for the spending cap through the existing ``sweeps_recent`` index, with
the sender: ``sweeps_spending`` serves that query.

Revision ID: 0020
Revises: 0016
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0020"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_holds",
        sa.Column("payment_id", postgresql.UUID(as_uuid=True),
                  sa.ForeignKey("payments.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("network", sa.String(length=32), primary_key=True),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("held", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("sweep_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("sweeps.id", ondelete="SET NULL"),
                  nullable=True),
        sa.Column("times_held", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("sweep_holds_network", "sweep_holds", ["network", "status"])
    op.create_index("sweeps_spending", "sweeps", ["network", "sender", "created_at"])


def downgrade() -> None:
    op.drop_index("sweeps_spending", table_name="sweeps")
    op.drop_index("sweep_holds_network", table_name="sweep_holds")
    op.drop_table("sweep_holds")
