"""Refunds tied to their payout (DESIGN §8, "Tied to its refund"): ``payout_tag`` (1–999 base
units added to the refund's amount, so the merchant pays ``payout_amount`` = amount + tag;
unique among the open refunds claimed to the same address on the same network, every
merchant and both modes), ``payout_from`` (the sender of the payout that completed it) and
``funds_reorged`` (the payment's own funds were lost in a reorg deeper than the required
confirmations while the refund was open).

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("refunds", sa.Column("payout_tag", sa.Integer(), nullable=True))
    op.add_column("refunds", sa.Column("payout_from", sa.String(length=100), nullable=True))
    op.add_column("refunds", sa.Column("funds_reorged", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_check_constraint("refunds_payout_tag_range", "refunds", "payout_tag BETWEEN 1 AND 999")
    op.create_index(
        "refunds_open_payout_tag",
        "refunds",
        ["network", sa.text("lower(address)"), "payout_tag"],
        unique=True,
        postgresql_where=sa.text("status = 'AWAITING_PAYMENT' AND payout_tag IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("refunds_open_payout_tag", table_name="refunds")
    op.drop_constraint("refunds_payout_tag_range", "refunds", type_="check")
    op.drop_column("refunds", "funds_reorged")
    op.drop_column("refunds", "payout_from")
    op.drop_column("refunds", "payout_tag")
