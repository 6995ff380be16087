"""Webhook secret rotation with an overlap (the previous secret and until when it still
signs), and created_at indexes for the retention job's batched purges.

Revision ID: 0012
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0009"
branch_labels = None
depends_on = None

RETENTION_INDEXES = {
    "events_retention": "events", "delivery_attempts_retention": "delivery_attempts",
    "processed_messages_retention": "processed_messages", "idempotency_keys_retention": "idempotency_keys",
}


def upgrade() -> None:
    op.add_column("webhook_endpoints", sa.Column("previous_secret", sa.String(length=100), nullable=True))
    op.add_column("webhook_endpoints",
                  sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True))
    for name, table in RETENTION_INDEXES.items():
        op.create_index(name, table, ["created_at"])


def downgrade() -> None:
    for name, table in RETENTION_INDEXES.items():
        op.drop_index(name, table_name=table)
    op.drop_column("webhook_endpoints", "previous_secret_expires_at")
    op.drop_column("webhook_endpoints", "previous_secret")
