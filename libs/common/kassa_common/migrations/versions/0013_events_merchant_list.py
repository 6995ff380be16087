"""The events API lists a merchant's events of one mode, newest first.

Revision ID: 0013
Revises: 0015
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("events_merchant_list", "events", ["merchant_id", "test_mode", sa.text("created_at DESC"), "id"])


def downgrade() -> None:
    op.drop_index("events_merchant_list", table_name="events")
