"""Pricing: the merchant's currency, the rate's source and lock, spread and arrival rates.

Payments and FIAT products get ``currency`` (ISO 4217; existing rows are USD); payments
record where their rate came from (``rate_source``), until when it holds
(``rate_locked_until``; null on older payments: their lifetime), the merchant's spread at
creation, and the rate at which funds arriving after the lock were valued
(``arrival_exchange_rate``, and per transfer ``exchange_rate``). Merchants get
``rate_spread_pct`` and ``rate_lock_minutes`` (null: the payment lifetime). Every new column
is nullable or has a constant default, so no table is rewritten.

Revision ID: 0021
Revises: 0020
"""
import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

RATE = sa.Numeric(36, 18)


def upgrade() -> None:
    op.add_column("payments", sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False))
    op.add_column("payments", sa.Column("rate_source", sa.Text(), nullable=True))
    op.add_column("payments", sa.Column("rate_locked_until", sa.DateTime(timezone=True), nullable=True))
    op.add_column("payments", sa.Column("rate_spread_pct", sa.Numeric(4, 2), server_default="0", nullable=False))
    op.add_column("payments", sa.Column("arrival_exchange_rate", RATE, nullable=True))
    op.add_column("transfers", sa.Column("exchange_rate", RATE, nullable=True))
    op.add_column("products", sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False))
    op.add_column("merchants", sa.Column("rate_spread_pct", sa.Numeric(4, 2), server_default="0", nullable=False))
    op.add_column("merchants", sa.Column("rate_lock_minutes", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("merchants", "rate_lock_minutes")
    op.drop_column("merchants", "rate_spread_pct")
    op.drop_column("products", "currency")
    op.drop_column("transfers", "exchange_rate")
    op.drop_column("payments", "arrival_exchange_rate")
    op.drop_column("payments", "rate_spread_pct")
    op.drop_column("payments", "rate_locked_until")
    op.drop_column("payments", "rate_source")
    op.drop_column("payments", "currency")
