"""Chains: a transfer is identified by what it is, a payment remembers where its chain
stood when it was created, and a watcher's cursor says when it last caught up.

- ``transfers.position``: the transfer's place inside its transaction (an ERC-20
  ``Transfer`` log's rank among the transaction's logs to the same address, -1 for a
  native transfer, the vout for Bitcoin). The unique key becomes (network, tx_hash,
  payment_id, position): a reorg that moves a transaction to another block at another
  log index reports the same transfer, not a second one.
- ``payments.created_block``: the height the network's watcher had scanned to when the
  payment was created; an address that reaches the watcher late is backfilled from there.
- ``chain_cursors.scanned_at``: when the watcher last had every block up to the tip
  scanned and reported; payments expire only once it passed their ``expires_at``.

Revision ID: 0009
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("transfers", sa.Column("position", sa.Integer(), nullable=True))
    op.execute("UPDATE transfers SET position = log_index")
    op.alter_column("transfers", "position", nullable=False)
    op.drop_constraint("transfers_network_tx_hash_log_index_key", "transfers", type_="unique")
    op.create_unique_constraint("transfers_identity", "transfers", ["network", "tx_hash", "payment_id", "position"])
    op.add_column("payments", sa.Column("created_block", sa.BigInteger(), nullable=True))
    op.add_column("chain_cursors", sa.Column("scanned_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("chain_cursors", "scanned_at")
    op.drop_column("payments", "created_block")
    op.drop_constraint("transfers_identity", "transfers", type_="unique")
    # Rows that only the new identity told apart cannot share the old key: keep the first.
    op.execute("DELETE FROM transfers t USING transfers o WHERE t.network = o.network AND t.tx_hash = o.tx_hash "
               "AND t.log_index = o.log_index AND (t.created_at, t.id) > (o.created_at, o.id)")
    op.create_unique_constraint("transfers_network_tx_hash_log_index_key", "transfers",
                                ["network", "tx_hash", "log_index"])
    op.drop_column("transfers", "position")
