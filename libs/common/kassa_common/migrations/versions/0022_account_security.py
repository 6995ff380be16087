"""Account security and fair webhook delivery: dashboard sessions kept on the server,
two-factor sign-in, and indexes of the webhook deliveries under way per endpoint and of
the emails sent or under way lately (the email claim's turns per recipient domain).

``dashboard_sessions`` holds one row per login (the SHA-256 of the cookie's random id):
logout and a password change revoke rows, so a copied cookie opens nothing afterwards.
``webhook_deliveries_leased`` lets a claim count each endpoint's deliveries under way
(leases are cleared as outcomes are recorded, so it stays small).

Revision ID: 0022
Revises: 0020
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("merchants", sa.Column("totp_secret", sa.String(length=64), nullable=True))
    op.add_column("merchants", sa.Column("totp_enabled_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("merchants", sa.Column("totp_last_step", sa.BigInteger(), nullable=True))
    op.add_column("merchants", sa.Column("recovery_code_hashes", postgresql.ARRAY(sa.Text()), server_default="{}",
                                         nullable=False))
    op.create_table(
        "dashboard_sessions",
        sa.Column("id_hash", sa.String(length=64), primary_key=True),
        sa.Column("merchant_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("merchants.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("user_agent", sa.String(length=300), nullable=True),
        sa.Column("address", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("dashboard_sessions_merchant", "dashboard_sessions", ["merchant_id", "last_seen_at"])
    op.create_index("notifications_sent", "notifications", ["sent_at"], postgresql_where=sa.text("sent_at IS NOT NULL"))
    op.create_index("notifications_leased", "notifications", ["lease_until"],
                    postgresql_where=sa.text("lease_until IS NOT NULL"))
    op.create_index("webhook_deliveries_leased", "webhook_deliveries", ["endpoint_id"],
                    postgresql_where=sa.text("status = 'PENDING' AND lease_until IS NOT NULL"))


def downgrade() -> None:
    for column in ("recovery_code_hashes", "totp_last_step", "totp_enabled_at", "totp_secret"):
        op.drop_column("merchants", column)
    op.drop_index("webhook_deliveries_leased", table_name="webhook_deliveries")
    op.drop_index("notifications_leased", table_name="notifications")
    op.drop_index("notifications_sent", table_name="notifications")
    op.drop_table("dashboard_sessions")
