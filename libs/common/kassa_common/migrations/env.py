"""Alembic environment: the URL comes from the caller (kassa_common.migrate), never from a file."""

from alembic import context

from kassa_common.db import make_engine
from kassa_common.models import Base

config = context.config


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None  # set by kassa_common.migrate
    engine = make_engine(url, pool_size=1, application_name="kassa-migrate")
    with engine.connect() as connection:
        # One migrator at a time, even with several instances starting together.
        connection.exec_driver_sql("SELECT pg_advisory_lock(715517)")
        connection.commit()
        try:
            context.configure(connection=connection, target_metadata=Base.metadata, compare_type=True)
            with context.begin_transaction():
                context.run_migrations()
        finally:
            connection.exec_driver_sql("SELECT pg_advisory_unlock(715517)")
            connection.commit()
    engine.dispose()


run_migrations_online()
