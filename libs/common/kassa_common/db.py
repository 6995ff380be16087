"""Engine and unit of work.

``make_engine`` is called by entrypoints (never at import time). ``unit_of_work`` opens a
session inside one transaction that rolls back unless the block finishes. Events leave
the process only through the outbox relay, after the data they describe is committed.

A pooled connection the server has closed (a restart, a terminated backend) is replaced
when it is checked out. The server says so on the socket (its farewell, or end of file)
while the connection sits idle, so a look at the socket finds it without a round trip;
only a connection with something to read is pinged. ``pre_ping`` adds a round trip
(``SELECT 1``) to every checkout on top: the workers keep it, the web, where a checkout
is a request, goes without. A connection lost while a statement runs fails that statement
(the web answers 503) and is replaced.
"""

from __future__ import annotations

import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import sqlalchemy as sa
from psycopg2.extensions import connection as PgConnection
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.orm import Session, sessionmaker


def sqlalchemy_url(database_url: str) -> str:
    """Accept plain ``postgresql://`` URLs and pin the psycopg2 driver.

    A libpq multi-host URL (``postgresql://u@h1:5432,h2:6432/kassa?target_session_attrs=read-write``)
    becomes SQLAlchemy's spelling of it (``postgresql+psycopg2://u@/kassa?host=h1:5432&host=h2:6432&…``),
    which psycopg2 hands to libpq as one connection string: libpq tries the hosts in turn
    and keeps the first that answers as asked (the primary, for ``read-write``)."""
    url = make_url(_sqlalchemy_spelling(database_url))
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg2")
    return url.render_as_string(hide_password=False)


def _sqlalchemy_spelling(database_url: str) -> str:
    """A libpq URL listing several hosts in its netloc, respelled with one ``host`` query
    parameter per host (each ``host:port``); any other URL as it is."""
    scheme, sep, rest = database_url.strip().partition("://")
    if not sep:
        return database_url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    if "," not in hostlist:
        return database_url
    hosts = [h.strip() for h in hostlist.split(",")]
    if not all(hosts):
        raise ValueError(f"an empty host in the host list {hostlist!r}")
    path, _, query = tail.partition("?")
    params = "&".join(f"host={h}" for h in hosts)
    query = f"{params}&{query}" if query else params
    return f"{scheme}://{userinfo}{at}/{path if slash else ''}?{query}"


def with_database(database_url: str, name: str) -> str:
    """``database_url`` (one host or several) naming database ``name`` instead, as libpq reads it."""
    return libpq_url(make_url(sqlalchemy_url(database_url)).set(database=name).render_as_string(hide_password=False))


def libpq_url(database_url: str) -> str:
    """``database_url`` as libpq reads it (several hosts in its netloc again), for code
    that connects through psycopg2 directly."""
    url = make_url(sqlalchemy_url(database_url)).set(drivername="postgresql")
    listed = url.query.get("host")
    if listed is None or isinstance(listed, str):
        return url.render_as_string(hide_password=False)
    names = list(listed)
    rendered = url.set(query={k: v for k, v in url.query.items() if k != "host"}).render_as_string(hide_password=False)
    scheme, _, rest = rendered.partition("://")
    userinfo, at, tail = rest.partition("@") if "@" in rest.partition("/")[0] else ("", "", rest)
    return f"{scheme}://{userinfo}{at}{','.join(names)}{tail}"


def make_engine(
    database_url: str, *, pool_size: int = 10, application_name: str = "kassa", pre_ping: bool = True
) -> Engine:
    engine = sa.create_engine(
        sqlalchemy_url(database_url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=pre_ping,
        pool_recycle=1800,
        connect_args={"application_name": application_name, "connect_timeout": 5},
    )
    sa.event.listen(engine, "checkout", _replace_if_closed_by_server)
    return engine


def _replace_if_closed_by_server(dbapi_connection, record, proxy) -> None:
    """Pool checkout hook: an idle connection with something to read was most likely closed
    by the server; if it does not answer a ping, the pool connects afresh."""
    if not _has_input(dbapi_connection):
        return
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        dbapi_connection.rollback()
    except Exception as exc:
        raise sa.exc.DisconnectionError(f"the server closed the connection: {exc}") from exc


def _has_input(dbapi_connection) -> bool:
    """Whether the server sent something to a connection no statement is running on."""
    if dbapi_connection.closed:
        return True
    poller = select.poll()
    try:
        poller.register(dbapi_connection.fileno(), select.POLLIN)
    except (OSError, ValueError):  # no socket any more
        return True
    return bool(poller.poll(0))


def autocommit_connection(engine: Engine) -> Connection:
    """A pooled connection whose statements each commit on their own; give it back with
    ``release_autocommit``. Switched on the driver's connection: switched through
    SQLAlchemy's ``isolation_level``, psycopg2 would reset its session defaults with a round
    trip each time the connection went back to the pool."""
    conn = engine.connect()
    driver = cast(PgConnection, conn.connection.dbapi_connection)
    driver.autocommit = True
    return conn


def release_autocommit(conn: Connection) -> None:
    """Give an ``autocommit_connection`` back to the pool as the pool lent it."""
    try:
        if not conn.invalidated and not conn.closed:
            driver = conn.connection.dbapi_connection
            if driver is not None and not driver.closed:
                driver.autocommit = False
    finally:
        conn.close()


@contextmanager
def autocommit(engine: Engine) -> Iterator[Connection]:
    conn = autocommit_connection(engine)
    try:
        yield conn
    finally:
        release_autocommit(conn)


class Prepared:
    """A statement each connection plans once (``PREPARE``) and then only executes
    (``EXECUTE``), on the driver's cursor: for a short statement run on every request,
    planning it costs the server more than running it, and building SQLAlchemy's result
    around it costs the client more than the driver's work. ``sql`` has psycopg2's
    ``%(name)s`` placeholders; ``types`` gives the SQL type of each (the order is the
    prepared statement's). Calling it returns the rows as tuples; a failure is raised as
    SQLAlchemy raises it (``sqlalchemy.exc.DBAPIError`` and its kinds), a lost connection
    invalidated. A prepared statement lives as long as the server's session: a new
    connection prepares it again."""

    def __init__(self, name: str, sql: str, types: dict[str, str]) -> None:
        self.name = name
        numbered = sql
        for position, param in enumerate(types, start=1):
            numbered = numbered.replace(f"%({param})s", f"${position}")
        if "%(" in numbered:
            raise ValueError(f"{name}: a parameter has no type: {numbered[numbered.index('%(') :][:40]}")
        self.prepare = f"PREPARE {name} ({', '.join(types.values())}) AS {numbered}"
        self.execute = f"EXECUTE {name} ({', '.join(f'%({param})s' for param in types)})"

    def __call__(self, conn: Connection, params: dict[str, Any]) -> list[tuple]:
        pooled = conn.connection
        driver = cast(PgConnection, pooled.dbapi_connection)
        prepared = pooled.info.setdefault("kassa.prepared", set())
        statement = self.execute
        try:
            with driver.cursor() as cursor:
                if self.name not in prepared:
                    statement = self.prepare
                    cursor.execute(statement)
                    prepared.add(self.name)
                    statement = self.execute
                cursor.execute(statement, params)
                return cursor.fetchall() if cursor.description is not None else []
        except conn.dialect.loaded_dbapi.Error as exc:
            lost = conn.dialect.is_disconnect(exc, pooled.dbapi_connection, None)
            if lost:
                conn.invalidate(exc)
            raise sa.exc.DBAPIError.instance(
                statement,
                params,
                exc,
                conn.dialect.loaded_dbapi.Error,
                connection_invalidated=lost,
                dialect=conn.dialect,
            ) from exc


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


def ensure_database(database_url: str) -> bool:
    """Create the database named in the URL if it does not exist. True if created."""
    url = make_url(sqlalchemy_url(database_url))
    admin = sa.create_engine(sqlalchemy_url(with_database(database_url, "postgres")), isolation_level="AUTOCOMMIT")
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
    with factory() as session, session.begin():
        yield session
