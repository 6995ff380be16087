"""Fixtures of the refund tests: a payment with confirmed funds (settled as the chain watcher
would report them), refunds made through the API, and a session rolled back after each test
(``db``) for the focused tests of the refund modules, which call them directly."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.support.api import API
from tests.support.refunds import settle_confirmed


@pytest.fixture
def paid_payment(create_payment, sessions):
    """A test-mode USDC payment of 12.34 on BASE that received ``units`` (default 15 USDC:
    over-paid), confirmed."""

    def make(merchant, units: int = 15_000_000, **fields):
        body = {"amount": 12.34, "token": "USDC", "network": "BASE", **fields}
        p = create_payment(merchant, body)
        settle_confirmed(sessions, p, units)
        return p

    return make


@pytest.fixture
def create_refund(client):
    def create(merchant, payment_id: str, body: dict | None = None, mode: str = "test"):
        r = client.post(f"{API}/payments/{payment_id}/refunds", json=body or {}, headers=merchant.headers(mode))
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    return create


@pytest.fixture
def db(engine):
    """A session whose work is rolled back after the test (the functions under test flush,
    never commit: their callers' transaction does)."""
    with engine.connect() as conn:
        outer = conn.begin()
        session = Session(bind=conn, join_transaction_mode="create_savepoint")
        try:
            yield session
        finally:
            session.close()
            outer.rollback()


@pytest.fixture
def good():
    """A customer's address of the test's own (EIP-55): other tests commit refunds claimed to
    their addresses, whose tags and payouts must not meet this test's."""
    from tests.support.refund_rows import wallet

    return wallet()


@pytest.fixture
def other():
    """Another address of the test's own."""
    from tests.support.refund_rows import wallet

    return wallet()
