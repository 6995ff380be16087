"""Telling an outage from a bad message (DESIGN §1), and the waits while one lasts."""

from __future__ import annotations

import psycopg2
import pytest
import sqlalchemy.exc as sa_exc

from kassa_common.transient import Backoff, is_transient


def wrapped(exc: Exception) -> Exception:
    """``exc`` raised again from inside an ``except`` block, as layers above the driver do."""
    try:
        try:
            raise exc
        except Exception as inner:
            raise RuntimeError("while settling") from inner
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    "exc",
    [
        sa_exc.OperationalError("SELECT 1", {}, psycopg2.OperationalError("connection refused")),
        sa_exc.InterfaceError("SELECT 1", {}, psycopg2.InterfaceError("connection already closed")),
        sa_exc.TimeoutError("QueuePool limit reached"),
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError("timed out"),
        type("AMQPConnectionError", (Exception,), {})(),
        wrapped(ConnectionResetError(104, "reset by peer")),
    ],
)
def test_connection_failures_and_timeouts_are_transient(exc):
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("malformed transfer report"),
        KeyError("network"),
        sa_exc.IntegrityError("INSERT", {}, psycopg2.IntegrityError("duplicate key")),
        sa_exc.ProgrammingError("SELECT", {}, psycopg2.ProgrammingError("no such column")),
        wrapped(ZeroDivisionError()),
    ],
)
def test_a_failure_of_the_message_itself_is_not_transient(exc):
    assert not is_transient(exc)


def test_backoff_grows_with_jitter_up_to_its_cap_and_starts_over_after_reset():
    backoff = Backoff(initial=0.5, cap=30)
    waits = [backoff.next() for _ in range(12)]
    assert 0.25 <= waits[0] <= 0.5
    assert 0.5 <= waits[1] <= 1.0
    assert all(15 <= w <= 30 for w in waits[7:])  # capped, never near zero
    assert len(set(waits)) == len(waits)  # jittered
    backoff.reset()
    assert backoff.next() <= 0.5
