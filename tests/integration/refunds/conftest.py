"""Fixtures of the refund tests: a payment with confirmed funds (settled as the chain watcher
would report them), and refunds made through the API."""

from __future__ import annotations

import pytest

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
