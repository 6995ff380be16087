"""The pool's connections (``kassa_common.db``): a connection the server closed is replaced
when it is checked out, prepared statements follow their connection, and a failure on the
driver's cursor is raised as SQLAlchemy raises it."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from kassa_common.db import Prepared, autocommit, make_engine
from tests.support.wait import until

ECHO = Prepared("kassa_test_echo", "SELECT %(value)s, pg_backend_pid()", {"value": "text"})


@pytest.fixture
def engine(settings):
    eng = make_engine(settings.database_url, pool_size=1, pre_ping=False)
    yield eng
    eng.dispose()


def backend_pid(engine) -> int:
    with autocommit(engine) as conn:
        return ECHO(conn, {"value": "x"})[0][1]


def backend_alive(engine, pid: int) -> bool:
    with engine.connect() as conn:
        return bool(conn.scalar(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}))


def test_a_connection_whose_backend_was_terminated_is_replaced_at_checkout(engine, settings):
    first = backend_pid(engine)
    admin = make_engine(settings.database_url, pool_size=1)
    try:
        with admin.connect() as conn:
            assert conn.scalar(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
        # terminate only signals the backend: wait until it has gone (and told its socket)
        until(lambda: not backend_alive(admin, first), timeout=10, message=f"backend {first} to exit")
    finally:
        admin.dispose()
    # the pooled connection is dead; the next checkout finds out and connects again, and the
    # statement is prepared again on the new connection
    second = backend_pid(engine)
    assert second != first


def test_a_prepared_statement_answers_with_its_rows(engine):
    with autocommit(engine) as conn:
        assert [row[0] for row in ECHO(conn, {"value": "it's"})] == ["it's"]
        assert ECHO(conn, {"value": None})[0][0] is None


def test_a_failure_is_raised_as_sqlalchemy_raises_it_and_the_connection_still_serves(engine):
    insert = Prepared(
        "kassa_test_insert",
        "INSERT INTO merchants (id, email) VALUES (%(id)s, %(email)s)",
        {"id": "uuid", "email": "text"},
    )
    merchant = {"id": uuid.uuid4(), "email": f"{uuid.uuid4().hex}@example.com"}
    with autocommit(engine) as conn:
        assert insert(conn, merchant) == []
        with pytest.raises(sa.exc.IntegrityError):
            insert(conn, merchant)
        assert ECHO(conn, {"value": "ok"})[0][0] == "ok"
