"""API keys: when each was last used (``last_used_at``), shown beside its ``created_at`` on
the dashboard. The API writes it at most once a minute per key (``kassa_api.auth``), so a
request with a key used within the minute writes nothing.

Revision ID: 0025
Revises: 0024
"""
import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("api_keys", "last_used_at")
