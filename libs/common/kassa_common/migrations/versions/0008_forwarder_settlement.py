"""Forwarder settlement: a settlement address as an EVM wallet, each payment's deposit salt
and where its funds went, the sweeps and what each moved.

Revision ID: 0008
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A wallet is an extended public key or (EVM only) a forwarder settlement address.
    op.alter_column("wallets", "xpub", existing_type=sa.Text(), nullable=True)
    op.add_column("wallets", sa.Column("settlement_address", sa.String(length=42), nullable=True))
    op.create_check_constraint("wallets_xpub_or_settlement", "wallets",
                               "num_nonnulls(xpub, settlement_address) = 1")

    op.alter_column("payments", "derivation_index", existing_type=sa.BigInteger(), nullable=True)
    op.add_column("payments", sa.Column("settlement_address", sa.String(length=42), nullable=True))
    op.add_column("payments", sa.Column("deposit_salt", sa.String(length=66), nullable=True))
    op.add_column("payments", sa.Column("swept_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("payments", sa.Column("sweep_tx_hash", sa.String(length=66), nullable=True))

    op.create_table(
        "sweeps",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("network", sa.String(length=32), nullable=False),
        sa.Column("sender", sa.String(length=42), nullable=False),
        sa.Column("nonce", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("tx_hash", sa.String(length=66), nullable=False),
        sa.Column("attempts", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column("deposits", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column("deposit_count", sa.Integer(), nullable=False),
        sa.Column("gas_limit", sa.BigInteger(), nullable=False),
        sa.Column("gas_used", sa.BigInteger(), nullable=True),
        sa.Column("effective_gas_price", sa.Numeric(precision=78, scale=0), nullable=True),
        sa.Column("cost_units", sa.Numeric(precision=78, scale=0), nullable=True),
        sa.Column("cost_usd", sa.Numeric(precision=18, scale=2), nullable=True),
        sa.Column("block_number", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("sweeps_in_flight", "sweeps", ["network", "nonce"], unique=False,
                    postgresql_where=sa.text("status IN ('PENDING','MINED')"))
    op.create_index("sweeps_recent", "sweeps", [sa.literal_column("created_at DESC")], unique=False)
    op.create_table(
        "sweep_items",
        sa.Column("sweep_id", sa.UUID(), nullable=False),
        sa.Column("payment_id", sa.UUID(), nullable=False),
        sa.Column("token", sa.String(length=16), nullable=False),
        sa.Column("amount_units", sa.Numeric(precision=78, scale=0), nullable=False),
        sa.ForeignKeyConstraint(["sweep_id"], ["sweeps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["payment_id"], ["payments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("sweep_id", "payment_id", "token"),
    )
    op.create_index("sweep_items_payment", "sweep_items", ["payment_id"], unique=False)

    # A confirmed transfer to a forwarder deposit is due for a sweep until one moves it.
    op.add_column("transfers", sa.Column("sweep_due", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column("transfers", sa.Column("sweep_id", sa.UUID(), nullable=True))
    op.create_foreign_key("transfers_sweep_id_fkey", "transfers", "sweeps", ["sweep_id"], ["id"],
                          ondelete="SET NULL")
    op.create_index("transfers_sweep_due", "transfers", ["network", "created_at"], unique=False,
                    postgresql_where=sa.text("sweep_due AND status = 'CONFIRMED'"))


def downgrade() -> None:
    op.drop_index("transfers_sweep_due", table_name="transfers",
                  postgresql_where=sa.text("sweep_due AND status = 'CONFIRMED'"))
    op.drop_constraint("transfers_sweep_id_fkey", "transfers", type_="foreignkey")
    op.drop_column("transfers", "sweep_id")
    op.drop_column("transfers", "sweep_due")
    op.drop_index("sweep_items_payment", table_name="sweep_items")
    op.drop_table("sweep_items")
    op.drop_index("sweeps_recent", table_name="sweeps")
    op.drop_index("sweeps_in_flight", table_name="sweeps", postgresql_where=sa.text("status IN ('PENDING','MINED')"))
    op.drop_table("sweeps")
    op.drop_column("payments", "sweep_tx_hash")
    op.drop_column("payments", "swept_at")
    op.drop_column("payments", "deposit_salt")
    op.drop_column("payments", "settlement_address")
    op.execute("DELETE FROM payments WHERE derivation_index IS NULL")
    op.alter_column("payments", "derivation_index", existing_type=sa.BigInteger(), nullable=False)
    op.drop_constraint("wallets_xpub_or_settlement", "wallets", type_="check")
    op.execute("DELETE FROM wallets WHERE xpub IS NULL")
    op.drop_column("wallets", "settlement_address")
    op.alter_column("wallets", "xpub", existing_type=sa.Text(), nullable=False)
