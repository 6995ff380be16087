"""Wake outbox relays on commit: NOTIFY kassa_outbox after each insert into events.

Revision ID: 0002
Revises: 0001
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE FUNCTION kassa_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('kassa_outbox', '');
            RETURN NULL;
        END $$;
    """)
    op.execute("""
        CREATE TRIGGER events_notify AFTER INSERT ON events
        FOR EACH STATEMENT EXECUTE FUNCTION kassa_outbox_notify();
    """)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS events_notify ON events")
    op.execute("DROP FUNCTION IF EXISTS kassa_outbox_notify()")
