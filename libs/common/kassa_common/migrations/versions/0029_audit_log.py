"""The audit log per store (DESIGN §14): who, what, which object, from where, when.

Revision ID: 0029
Revises: 0028
"""

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("store_id", sa.Uuid(), sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.Uuid()),
        sa.Column("actor_label", sa.String(320)),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("object_type", sa.String(32), nullable=False),
        sa.Column("object_id", sa.String(100)),
        sa.Column("detail", sa.String(500)),
        sa.Column("ip", sa.String(64)),
        sa.Column("user_agent", sa.String(300)),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.create_index("audit_log_store", "audit_log", ["store_id", sa.text("created_at DESC")])
    op.create_index("audit_log_created", "audit_log", ["created_at"])


def downgrade() -> None:
    op.drop_table("audit_log")
