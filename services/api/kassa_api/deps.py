"""What a request needs, built once by create_app and reached through ``current_app``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import Flask, current_app, g
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.accounts.logins import LoginStore
from kassa_common.config import Settings
from kassa_common.db import autocommit_connection, release_autocommit
from kassa_common.owner import Owner
from kassa_common.pricing.service import RateService
from kassa_api.ratelimit import RateLimiter


@dataclass
class Deps:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    limiter: RateLimiter  # per API key
    rates: RateService
    public_limiter: RateLimiter  # payments started from product pages, per client address
    login_failures: RateLimiter  # failed dashboard logins, per client address and email
    login_failures_by_address: RateLimiter  # failed dashboard logins, per client address across emails
    signups: RateLimiter  # sign-ups, per client address
    logins: LoginStore  # dashboard sessions kept on the server
    read_sessions: sessionmaker[Session] | None = None  # DATABASE_READ_URL's (a replica); None: ``sessions``


def deps() -> Deps:
    return current_app.extensions["kassa"]


def make_owner(merchant_id, test_mode: bool, lifetime_minutes: int | None) -> Owner:
    """The one place an ``Owner`` is built: for an API key, a dashboard session or a product
    page's merchant; a merchant without a lifetime of its own gets the setting's."""
    return Owner(merchant_id, test_mode, lifetime_minutes or deps().settings.payment_lifetime_minutes)


def connection() -> Connection:
    """The request's connection for statements that are each a transaction of their own
    (autocommit): the API key lookup, and a create, which writes in one statement. Checked
    out on first use, returned at teardown; work that needs a transaction uses ``db()``."""
    if "conn" not in g:
        g.conn = autocommit_connection(deps().engine)
    return g.conn


def release_connection() -> None:
    """Give the request's autocommit connection back now (the API key lookup is done) before
    a transaction that may wait for a row lock: a request then holds one connection at a
    time, so requests queued behind one lock cannot take the whole pool between them."""
    conn = g.pop("conn", None)
    if conn is not None:
        release_autocommit(conn)


def db() -> Session:
    """The request's session (opened on first use, closed at teardown)."""
    if "db" not in g:
        g.db = deps().sessions()
    return g.db


def read_db() -> Session:
    """The request's session for the dashboard's lists and exports: on ``DATABASE_READ_URL``
    (a replica, a moment behind the primary) when it is set, else the request's ``db()``."""
    if deps().read_sessions is None:
        return db()
    if "read_db" not in g:
        g.read_db = deps().read_sessions()  # type: ignore[misc]  # not None: checked above
    return g.read_db


def read_sessions() -> sessionmaker[Session]:
    """The session factory ``read_db`` draws from (a streamed export opens its own session)."""
    return deps().read_sessions or deps().sessions


@contextmanager
def transaction() -> Iterator[Session]:
    """The request's session, committed at the end of the block (rolled back on error)."""
    session = db()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise


def init_app(app: Flask, d: Deps) -> None:
    app.extensions["kassa"] = d

    @app.teardown_appcontext
    def _close(exc: BaseException | None) -> None:
        for name in ("db", "read_db"):
            session = g.pop(name, None)
            if session is not None:
                session.close()
        conn = g.pop("conn", None)
        if conn is not None:
            release_autocommit(conn)
