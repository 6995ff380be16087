"""Email notifications: the merchant's on/off switch, and one row per email to send.

``notifications`` is the notifier's outbox of emails: a row is written (PENDING) in the
transaction that consumes the payment event, unique per (event, kind), then sent and
marked SENT; ``lease_until`` is the claim of a sender that is sending it right now.

Revision ID: 0016
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("merchants", sa.Column("notify_email", sa.Boolean(), server_default=sa.true(), nullable=False))
    op.create_table(
        "notifications",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True),
        sa.Column("event_id", sa.String(length=40), sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body_text", sa.Text(), nullable=False),
        sa.Column("body_html", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.UniqueConstraint("event_id", "kind", name="notifications_event_kind"),
    )
    op.create_index("notifications_due", "notifications", ["next_attempt_at"],
                    postgresql_where=sa.text("status = 'PENDING'"))


def downgrade() -> None:
    op.drop_index("notifications_due", table_name="notifications")
    op.drop_table("notifications")
    op.drop_column("merchants", "notify_email")
