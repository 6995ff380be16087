"""Wrong network: the supported tokens that reached a payment's address on another EVM
network, recorded on the payment (not counted).

Revision ID: 0015
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("payments", sa.Column("wrong_network", postgresql.JSONB(astext_type=sa.Text()),
                                        server_default="[]", nullable=False))


def downgrade() -> None:
    op.drop_column("payments", "wrong_network")
