"""Watching a payment's whole life: backfill heights per network, expiry after settlement.

- ``payments.watch_points``: where every network's watcher stood (its cursor's height, by
  network name) when the payment was created. An EVM address is watched on the other EVM
  networks too (wrong network); each of those watchers backfills it from its own height,
  never from the payment's own network's height.
- ``chain_reports`` and ``settled_watermarks``: the reports a watcher published, numbered per
  network, until a watermark found them applied by the settler; and per network the time up
  to which the settler has applied everything the watcher reported (``settled_at``). Live
  payments expire once that passed their ``expires_at`` (``payments.watermark``). Each
  network with a cursor starts settled at its ``scanned_at``: what the old rule allowed.
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
    op.create_table(
        "chain_reports",
        sa.Column("seq", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("network", sa.String(32), nullable=False),
        sa.Column("message_id", sa.String(100), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.create_index("chain_reports_network", "chain_reports", ["network", "seq"])
    op.create_table(
        "settled_watermarks",
        sa.Column("network", sa.String(32), primary_key=True),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.execute("INSERT INTO settled_watermarks (network, settled_at) "
               "SELECT network, scanned_at FROM chain_cursors WHERE scanned_at IS NOT NULL")


def downgrade() -> None:
    op.drop_table("settled_watermarks")
    op.drop_index("chain_reports_network", table_name="chain_reports")
    op.drop_table("chain_reports")
    op.drop_column("chain_mempool_transfers", "sighting")
    op.drop_column("payments", "watch_points")
