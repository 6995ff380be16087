"""Refunds (DESIGN §8): a claim the merchant pays from their own wallet, proven on chain.

A refund belongs to a payment (same merchant and mode); its amount is in the payment's token
(base units, with the token's ``decimals`` copied). The customer claims it through
``claim_token`` (the claim page) with an ``address``; the watchers then look for one transfer
paying it (``transfer_ref``: "<tx hash>:<log index or vout>", unique per network, so one
transfer pays at most one refund) in a block after ``claim_block``. An Idempotency-Key of a refund's create names it (``idempotency_keys.refund_id``).

Revision ID: 0024
Revises: 0023
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "refunds",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True),
        sa.Column("merchant_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("payment_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("payments.id", ondelete="CASCADE"), nullable=False),
        sa.Column("test_mode", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("amount_units", sa.Numeric(78, 0), nullable=False),
        sa.Column("token", sa.String(length=16), nullable=False),
        sa.Column("network", sa.String(length=32), nullable=False),
        sa.Column("decimals", sa.SmallInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("claim_token", sa.String(length=64), nullable=False, unique=True),
        sa.Column("address", sa.String(length=100), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claim_block", sa.BigInteger(), nullable=True),
        sa.Column("transaction_hash", sa.String(length=100), nullable=True),
        sa.Column("transfer_ref", sa.String(length=120), nullable=True),
        sa.Column("payout_units", sa.Numeric(78, 0), nullable=True),
        sa.Column("payout_block_number", sa.BigInteger(), nullable=True),
        sa.Column("payout_block_hash", sa.String(length=100), nullable=True),
        sa.Column("confirmations", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("amount_units > 0", name="refunds_amount_positive"),
    )
    op.create_index(
        "refunds_transfer_ref",
        "refunds",
        ["network", "transfer_ref"],
        unique=True,
        postgresql_where=sa.text("transfer_ref IS NOT NULL"),
    )
    op.create_index("refunds_network_status", "refunds", ["network", "status"])
    op.create_index("refunds_address", "refunds", [sa.literal_column("lower(address)")])  # payouts match any case
    op.create_index("refunds_payment", "refunds", ["payment_id"])
    op.create_index(
        "refunds_unclaimed_expiry", "refunds", ["expires_at"], postgresql_where=sa.text("status = 'AWAITING_ADDRESS'")
    )


    # an Idempotency-Key of POST /payments/:id/refunds names the refund it made
    op.add_column("idempotency_keys", sa.Column("refund_id", postgresql.UUID(as_uuid=True), nullable=True))


def downgrade() -> None:
    op.drop_column("idempotency_keys", "refund_id")
    op.drop_index("refunds_unclaimed_expiry", table_name="refunds", postgresql_where=sa.text("status = 'AWAITING_ADDRESS'"))
    op.drop_index("refunds_payment", table_name="refunds")
    op.drop_index("refunds_address", table_name="refunds")
    op.drop_index("refunds_network_status", table_name="refunds")
    op.drop_index("refunds_transfer_ref", table_name="refunds", postgresql_where=sa.text("transfer_ref IS NOT NULL"))
    op.drop_table("refunds")
