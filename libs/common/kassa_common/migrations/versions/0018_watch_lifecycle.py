"""Watching a payment's whole life: backfill heights per network, expiry after settlement.

- ``payments.watch_points``: where every network's watcher stood (its cursor's height, by
  network name) when the payment was created. An EVM address is watched on the other EVM
  networks too (wrong network); each of those watchers backfills it from its own height,
  never from the payment's own network's height.
- ``chain_mempool_transfers.sighting``: the token of a transfer's stay in the mempool; a
  transaction dropped and broadcast again is reported under a new one (new message ids).

Revision ID: 0018
Revises: 0016
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0018"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("payments", sa.Column("watch_points", postgresql.JSONB(), server_default="{}", nullable=False))
    op.add_column("chain_mempool_transfers", sa.Column("sighting", sa.String(32), server_default="", nullable=False))


def downgrade() -> None:
    op.drop_column("chain_mempool_transfers", "sighting")
    op.drop_column("payments", "watch_points")
