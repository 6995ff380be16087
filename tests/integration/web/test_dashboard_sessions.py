"""Dashboard logins kept on the server, tried as an attacker would: a cookie copied before a
logout or a password change, rotating emails against the login form, sign-ups in bulk."""

from __future__ import annotations

import re
import secrets
import time

import pytest

from kassa_api.app import create_app
from tests.support.dashboard import csrf_of, merchant_with_password

REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["postgres", "redis"])
def make_client(request, settings, engine):
    """Browsers of one web process whose logins live in PostgreSQL, or in Redis."""
    shared = settings.with_(redis_url=REDIS) if request.param == "redis" else settings
    app = create_app(shared, engine=engine)
    return lambda: app.test_client()


def log_in(client, email: str, password: str = "s3cret-pass", agent: str = "TestBrowser/1.0"):
    token = csrf_of(client.get("/dashboard/login"))
    r = client.post(
        "/dashboard/login",
        data={"csrf_token": token, "email": email, "password": password},
        headers={"User-Agent": agent},
    )
    assert r.status_code == 303, r.get_data(as_text=True)
    return r


def cookie_of(client) -> str:
    return client.get_cookie("session").value


def opens_dashboard(client) -> bool:
    r = client.get("/dashboard/payments")
    return r.status_code == 200


def with_cookie(make_client, value: str):
    thief = make_client()
    thief.set_cookie("session", value)
    return thief


def test_a_cookie_copied_before_logout_is_refused_after_it(make_client, sessions):
    email = merchant_with_password(sessions)
    browser = make_client()
    log_in(browser, email)
    copied = cookie_of(browser)
    assert opens_dashboard(with_cookie(make_client, copied))  # the copy works while the login lasts
    token = csrf_of(browser.get("/dashboard/settings"))
    assert browser.post("/dashboard/logout", data={"csrf_token": token}).status_code == 303
    thief = with_cookie(make_client, copied)
    r = thief.get("/dashboard/payments")
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/login")
    assert thief.get("/dashboard/wallets").status_code == 303


def test_the_session_id_changes_at_login(make_client, sessions):
    email = merchant_with_password(sessions)
    browser = make_client()
    browser.get("/dashboard/login")
    before = cookie_of(browser)
    log_in(browser, email)
    first = cookie_of(browser)
    assert first != before
    log_in(browser, email)
    assert cookie_of(browser) != first
    assert not opens_dashboard(with_cookie(make_client, before))


def test_a_password_change_logs_out_every_other_session(make_client, sessions):
    email = merchant_with_password(sessions)
    laptop, phone = make_client(), make_client()
    log_in(laptop, email, agent="Laptop/1")
    log_in(phone, email, agent="Phone/2")
    assert opens_dashboard(phone)
    token = csrf_of(laptop.get("/dashboard/settings"))
    wrong = laptop.post(
        "/dashboard/settings/password",
        data={
            "csrf_token": token,
            "current_password": "not-it",
            "new_password": "n3w-pass-word",
            "confirm_password": "n3w-pass-word",
        },
    )
    assert wrong.status_code == 400 and "current password is wrong" in wrong.get_data(as_text=True)
    assert opens_dashboard(phone)
    r = laptop.post(
        "/dashboard/settings/password",
        data={
            "csrf_token": token,
            "current_password": "s3cret-pass",
            "new_password": "n3w-pass-word",
            "confirm_password": "n3w-pass-word",
        },
    )
    assert r.status_code == 200 and "Password changed" in r.get_data(as_text=True)
    assert not opens_dashboard(phone)
    assert opens_dashboard(laptop)
    log_in(make_client(), email, password="n3w-pass-word")


def test_settings_list_active_logins_and_revoke_one(make_client, sessions):
    email = merchant_with_password(sessions)
    laptop, phone = make_client(), make_client()
    log_in(laptop, email, agent="Laptop/1")
    log_in(phone, email, agent="Phone/2")
    page = laptop.get("/dashboard/settings").get_data(as_text=True)
    assert "Laptop/1" in page and "Phone/2" in page and "(this browser)" in page
    assert "127.0.0.1" in page
    refs = re.findall(r'data-login="([0-9a-f]{64})"', page)
    assert len(refs) == 2
    other = [ref for ref in refs if f"/dashboard/settings/logins/{ref}/revoke" in page]
    assert len(other) == 1  # no revoke button on this browser's own line
    token = csrf_of(laptop.get("/dashboard/settings"))
    assert laptop.post(f"/dashboard/settings/logins/{other[0]}/revoke", data={"csrf_token": token}).status_code == 303
    assert not opens_dashboard(phone) and opens_dashboard(laptop)
    assert "Phone/2" not in laptop.get("/dashboard/settings").get_data(as_text=True)


def test_another_merchants_login_cannot_be_revoked(make_client, sessions):
    mine, theirs = merchant_with_password(sessions), merchant_with_password(sessions)
    me, them = make_client(), make_client()
    log_in(me, mine)
    log_in(them, theirs)
    their_ref = re.search(r'data-login="([0-9a-f]{64})"', them.get("/dashboard/settings").get_data(as_text=True))
    token = csrf_of(me.get("/dashboard/settings"))
    me.post(f"/dashboard/settings/logins/{their_ref.group(1)}/revoke", data={"csrf_token": token})
    assert opens_dashboard(them)


@pytest.fixture
def strict_client(settings, engine):
    """A web process with the production throttles, seen from an address of its own. The
    throttles count in fixed windows (5 minutes for failed logins, an hour for sign-ups): a
    test that crossed a window's end would see its count start again, so it starts clear of
    one."""
    left = 300 - time.time() % 300  # the hour's windows end at one of these too
    if left < 15:
        time.sleep(left + 1)
    strict = settings.with_(web={"login_failures_per_address": 20, "signups_per_hour": 10})
    address = f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250)}"
    client = create_app(strict, engine=engine).test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_failed_logins_are_limited_per_address_across_emails(strict_client, sessions):
    client = strict_client
    token = csrf_of(client.get("/dashboard/login"))
    codes = [
        client.post(
            "/dashboard/login", data={"csrf_token": token, "email": f"nobody{i}@example.com", "password": "wrong-one"}
        ).status_code
        for i in range(21)
    ]
    assert codes == [401] * 20 + [429]
    email = merchant_with_password(sessions)
    right = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})
    assert right.status_code == 429


def test_sign_ups_are_limited_per_address(strict_client):
    client = strict_client
    token = csrf_of(client.get("/dashboard/signup"))
    tag = secrets.token_hex(4)
    codes = [
        client.post(
            "/dashboard/signup",
            data={
                "csrf_token": token,
                "email": f"s{tag}{i}@example.com",
                "password": "long-enough-1",
                "business_name": "Shop",
            },
        ).status_code
        for i in range(11)
    ]
    assert codes == [200] * 10 + [429]
