"""The merchant dashboard in tests: a merchant who signs in with a password, the CSRF
token of a page, a signed-in client and a form post, and what a refused form shows beside
a field."""

from __future__ import annotations

import html
import re
import secrets

from kassa_common.accounts import merchants
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


def tag_of(page: str, element_id: str) -> str:
    match = re.search(rf'<(?:input|select|textarea)[^>]*\bid="{re.escape(element_id)}"[^>]*>', page)
    assert match, f"the page has the field {element_id}"
    return match.group(0)


def assert_beside(page: str, element_id: str, *words: str) -> None:
    """The field's error is under its label, just before its input, says ``words`` and is tied to it."""
    error = re.search(rf'<p class="field-error form-error" id="{re.escape(element_id)}-error">([^<]*)</p>', page)
    assert error, f"an error beside {element_id}"
    text = html.unescape(error.group(1))
    for word in words:
        assert word in text, (element_id, text)
    label = page.rindex(f'for="{element_id}"', 0, error.start())
    assert error.start() - label < 200, "the error follows the field's label"
    tag = tag_of(page, element_id)
    assert page.index(tag) > error.start()
    assert 'aria-invalid="true"' in tag and f"{element_id}-error" in re.search(
        r'aria-describedby="([^"]*)"', tag
    ).group(1)


def assert_clean(page: str, element_id: str) -> None:
    assert f'id="{element_id}-error"' not in page
    assert "aria-invalid" not in tag_of(page, element_id)


def value_of(page: str, element_id: str) -> str:
    match = re.search(r'value="([^"]*)"', tag_of(page, element_id))
    return html.unescape(match.group(1)) if match else ""


def cookie_text(client) -> str:
    """What the browser's session cookie says to anyone holding it: Flask signs it, it does
    not hide it (base64 of the JSON, zlib-compressed when that is shorter)."""
    import base64
    import zlib

    value = client.get_cookie("session").value
    compressed = value.startswith(".")
    payload = value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    return (zlib.decompress(raw) if compressed else raw).decode()


def opens_dashboard(client) -> bool:
    """Whether ``client``'s login still opens a dashboard page."""
    return client.get("/dashboard/payments").status_code == 200
