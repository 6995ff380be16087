"""Fixtures for the merchant API acceptance tests: ready-made payments, products and
webhooks through the API, and a merchant whose live mode has a wallet."""

from __future__ import annotations

import secrets

import pytest

from tests.support.api import API, LIVE_PAYMENT, PAYMENT, set_live_wallet
from tests.support.dashboard import signed_in


@pytest.fixture
def live_merchant(make_merchant, sessions):
    """A merchant whose live mode has an EVM wallet, so live LOCAL_EVM payments work."""
    m = make_merchant()
    set_live_wallet(sessions, m.id)
    return m


@pytest.fixture
def create_payment(client):
    def create(merchant, body=None, mode: str = "test", **headers):
        r = client.post(
            f"{API}/payments",
            json=body or (PAYMENT if mode == "test" else LIVE_PAYMENT),
            headers=merchant.headers(mode, **headers),
        )
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    return create


@pytest.fixture
def create_product(client):
    def create(merchant, mode: str = "test", **fields):
        body = {"name": f"Item {secrets.token_hex(3)}", "price": 19.99, **fields}
        r = client.post(f"{API}/products", json=body, headers=merchant.headers(mode))
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    return create


@pytest.fixture
def create_webhook(client):
    def create(merchant, mode: str = "test", **fields):
        body = {"url": f"https://hooks.example.com/{secrets.token_hex(4)}", **fields}
        r = client.post(f"{API}/webhooks", json=body, headers=merchant.headers(mode))
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    return create


@pytest.fixture
def dash(client, sessions):
    """A dashboard client signed in as a new merchant (test mode): ``email`` and ``token`` on it."""
    return signed_in(client, sessions)
