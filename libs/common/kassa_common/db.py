"""Engine and unit of work.

``make_engine`` is called by entrypoints (never at import time). ``unit_of_work`` opens a
session inside one transaction that rolls back unless the block finishes. Events leave
the process only through the outbox relay, after the data they describe is committed.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker


def sqlalchemy_url(database_url: str) -> str:
    """Accept plain ``postgresql://`` URLs and pin the psycopg2 driver."""
    url = make_url(database_url)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg2")
    return url.render_as_string(hide_password=False)


def make_engine(database_url: str, *, pool_size: int = 10, application_name: str = "kassa") -> Engine:
    return sa.create_engine(
        sqlalchemy_url(database_url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_recycle=1800,
        connect_args={"application_name": application_name, "connect_timeout": 5},
    )


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


def ensure_database(database_url: str) -> bool:
    """Create the database named in the URL if it does not exist. True if created."""
    url = make_url(sqlalchemy_url(database_url))
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.scalar(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": url.database})
            if not exists:
                conn.execute(sa.text(f'CREATE DATABASE "{url.database}"'))
                return True
            return False
    finally:
        admin.dispose()


@contextmanager
def unit_of_work(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session in one transaction: committed when the block exits normally."""
    with factory() as session:
        with session.begin():
            yield session
