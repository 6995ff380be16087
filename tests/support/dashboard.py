"""The merchant dashboard in tests: a merchant who signs in with a password, the CSRF
token of a page, a signed-in client and a form post."""

from __future__ import annotations

import re
import secrets

from kassa_common import merchants
from kassa_common.db import unit_of_work

PASSWORD = "s3cret-pass"


def csrf_of(page) -> str:
    """The CSRF token of a page: a Flask response or its HTML."""
    html = page if isinstance(page, str) else page.get_data(as_text=True)
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has a CSRF token"
    return match.group(1)


def merchant_with_password(sessions, password: str = PASSWORD) -> str:
    """A new active merchant; its email."""
    email = f"d-{secrets.token_hex(5)}@example.com"
    with unit_of_work(sessions) as s:
        merchants.create_merchant(s, email, password, "Dash Ltd", activate=True)
    return email


def log_in(client, email: str, password: str = PASSWORD) -> None:
    """Sign ``client`` in to the dashboard (asserting the redirect of a good login)."""
    token = csrf_of(client.get("/dashboard/login"))
    r = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": password})
    assert r.status_code == 303, r.get_data(as_text=True)


def switch_mode(client, mode: str) -> None:
    token = csrf_of(client.get("/dashboard/keys"))
    r = client.post("/dashboard/mode", data={"csrf_token": token, "mode": mode, "next": "/dashboard/wallets"})
    assert r.status_code == 303, r.get_data(as_text=True)


def signed_in(client, sessions, mode: str | None = None):
    """``client`` signed in as a new merchant (in ``mode`` when given), with ``email`` and
    a fresh CSRF ``token`` on it."""
    client.email = merchant_with_password(sessions)
    log_in(client, client.email)
    if mode:
        switch_mode(client, mode)
    client.token = csrf_of(client.get("/dashboard/keys"))  # a new session: a new token
    return client


def post(dash, path, **data):
    """A dashboard form post with the client's CSRF token."""
    return dash.post(path, data={"csrf_token": dash.token, **data})
