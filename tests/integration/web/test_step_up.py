"""Step-up checks (DESIGN §10), tried as the holder of a stolen dashboard session would:
the password or a code asked again behind a login (a live wallet change, a password
change, two-factor on and off) is throttled like the login, per merchant and per client
address, and past the limit nothing is checked at all; turning two-factor on asks for the
password; any two-factor change (the merchant's or the operator's) signs every other login
out; the secret being enrolled is not in the cookie; recovery codes are stored salted."""

from __future__ import annotations

import hashlib
import re
import secrets
import time

import pyotp
import pytest
import sqlalchemy as sa

from kassa_common.accounts import merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Account, Merchant, Wallet
from kassa_api.app import create_app
from tests.support.cli import run_kassa
from tests.support.dashboard import (
    PASSWORD,
    cookie_text,
    csrf_of,
    log_in,
    merchant_with_password,
    opens_dashboard,
    switch_mode,
)
from tests.support.keys import fresh_key

NEW = "n3w-pass-word"
REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture
def web(settings, engine):
    """``web(per_address)``: a factory of browsers of one web process, each from a client
    address of its own unless given one. The throttles count in 5-minute windows: a test
    that crossed a window's end would see its count start again, so it starts clear of one."""
    left = 300 - time.time() % 300
    if left < 20:
        time.sleep(left + 1)

    def make(per_address: int = 20, redis_url: str | None = None):
        app = create_app(
            settings.with_(web={"login_failures_per_address": per_address}, redis_url=redis_url), engine=engine
        )

        def browser(address: str | None = None):
            client = app.test_client()
            client.environ_base["REMOTE_ADDR"] = address or f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.7"
            return client

        return browser

    return make


@pytest.fixture
def argon2_calls(monkeypatch):
    """Every password check (an argon2 verification) made from now on."""
    calls: list[str] = []
    real = merchants.check_password

    def spy(stored, password):
        calls.append(password)
        return real(stored, password)

    monkeypatch.setattr(merchants, "check_password", spy)
    return calls


def change_password(client, current: str):
    token = csrf_of(client.get("/dashboard/settings"))
    return client.post(
        "/dashboard/settings/password",
        data={"csrf_token": token, "current_password": current, "new_password": NEW, "confirm_password": NEW},
    )


def enrol(client, password: str = PASSWORD) -> tuple[str, list[str]]:
    """Turn two-factor sign-in on from the settings page: the secret and the recovery codes."""
    page = client.get("/dashboard/settings/2fa").get_data(as_text=True)
    secret = re.search(r'id="totp-secret" class="value">([A-Z2-7]+)<', page).group(1)
    r = client.post(
        "/dashboard/settings/2fa/enable",
        data={"csrf_token": csrf_of(page), "password": password, "code": pyotp.TOTP(secret).now()},
    )
    body = r.get_data(as_text=True)
    assert r.status_code == 200 and "Two-factor sign-in is <strong>on</strong>" in body, body
    return secret, re.findall(r"<li><code>([a-z2-9]{5}-[a-z2-9]{5})</code></li>", body)


def two_factor_on(sessions, email: str) -> bool:
    with sessions() as s:
        return s.scalar(sa.select(Account.totp_enabled_at).where(Account.email == email)) is not None


def disable(client, code: str, password: str = PASSWORD):
    token = csrf_of(client.get("/dashboard/settings/2fa"))
    return client.post(
        "/dashboard/settings/2fa/disable", data={"csrf_token": token, "password": password, "code": code}
    )


def with_recovery_code(client, email: str, code: str) -> None:
    log_in(client, email)  # the password step
    token = csrf_of(client.get("/dashboard/login/code"))
    r = client.post("/dashboard/login/code", data={"csrf_token": token, "recovery_code": code})
    assert r.status_code == 303, r.get_data(as_text=True)


def other_code(secret: str) -> str:
    """A six-digit code that is none of the secret's accepted ones now."""
    totp, now = pyotp.TOTP(secret), time.time()
    taken = {totp.at(now + d) for d in (-30, 0, 30)}
    return next(c for c in (f"{n:06d}" for n in range(10)) if c not in taken)


# ---- throttled like the login ---------------------------------------------------------------


def test_wrong_current_passwords_are_throttled_per_merchant_then_not_checked(web, sessions, argon2_calls):
    email = merchant_with_password(sessions)
    browser = web()
    thief = browser()
    log_in(thief, email)
    codes = [change_password(thief, f"guess-{n}").status_code for n in range(6)]
    assert codes == [400] * 5 + [429]
    argon2_calls.clear()
    right = change_password(thief, PASSWORD)
    assert right.status_code == 429 and "Too many wrong attempts" in right.get_data(as_text=True)
    assert argon2_calls == []  # past the limit no password is even checked
    elsewhere = browser()  # another address, the same merchant: still counted
    log_in(elsewhere, email)
    assert change_password(elsewhere, PASSWORD).status_code == 429
    log_in(web()(), email)  # the password is unchanged


def test_step_ups_are_throttled_per_client_address_across_merchants(web, sessions):
    browser = web(per_address=3)
    first, second = merchant_with_password(sessions), merchant_with_password(sessions)
    one, two = browser("10.200.1.1"), browser("10.200.1.1")
    log_in(one, first)
    log_in(two, second)
    assert [change_password(one, f"guess-{n}").status_code for n in range(3)] == [400] * 3
    assert change_password(two, PASSWORD).status_code == 429  # another merchant, the same address
    other = browser("10.200.1.2")
    log_in(other, second)
    assert change_password(other, PASSWORD).status_code == 200


def test_a_live_wallet_change_is_throttled(web, sessions, argon2_calls):
    email = merchant_with_password(sessions)
    thief = web()()
    log_in(thief, email)
    switch_mode(thief, "live")
    token = csrf_of(thief.get("/dashboard/wallets"))
    key = fresh_key()

    def ask(password: str):
        return thief.post(
            "/dashboard/wallets", data={"csrf_token": token, "chain": "evm", "xpub": key, "password": password}
        )

    assert [ask(f"guess-{n}").status_code for n in range(5)] == [403] * 5
    argon2_calls.clear()
    r = ask(PASSWORD)
    assert r.status_code == 429 and "Too many wrong attempts" in r.get_data(as_text=True)
    assert argon2_calls == []
    with sessions() as s:
        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == email))
        assert s.scalar(sa.select(Wallet.xpub).where(Wallet.merchant_id == merchant_id, Wallet.mode == "live")) is None


def test_wrong_codes_to_turn_two_factor_off_are_throttled(web, sessions):
    email = merchant_with_password(sessions)
    thief = web()()
    log_in(thief, email)
    secret, _ = enrol(thief)
    wrong = other_code(secret)
    assert [disable(thief, wrong).status_code for _ in range(5)] == [400] * 5
    right = disable(thief, pyotp.TOTP(secret).at(time.time() + 30))
    assert right.status_code == 429 and two_factor_on(sessions, email)


# ---- two-factor on asks for the password; every change signs the other logins out --------


def test_turning_two_factor_on_asks_for_the_password(web, sessions):
    email = merchant_with_password(sessions)
    thief = web()()
    log_in(thief, email)
    page = thief.get("/dashboard/settings/2fa").get_data(as_text=True)
    assert 'id="enrol-password"' in page
    secret = re.search(r'id="totp-secret" class="value">([A-Z2-7]+)<', page).group(1)
    for password in ("", "not-it"):
        r = thief.post(
            "/dashboard/settings/2fa/enable",
            data={"csrf_token": csrf_of(page), "password": password, "code": pyotp.TOTP(secret).now()},
        )
        assert r.status_code == 400 and "password" in r.get_data(as_text=True)
        assert not two_factor_on(sessions, email)
    enrol(thief)
    assert two_factor_on(sessions, email)


@pytest.mark.parametrize("store", ["postgres", "redis"])
def test_every_two_factor_change_signs_the_other_logins_out(web, sessions, settings, store):
    """Logins kept in PostgreSQL, or in Redis (the operator's command then reaches them there)."""
    redis_url = REDIS if store == "redis" else None
    email = merchant_with_password(sessions)
    browser = web(redis_url=redis_url)
    laptop, phone = browser(), browser()
    log_in(laptop, email)
    log_in(phone, email)
    _, codes = enrol(laptop)
    assert not opens_dashboard(phone) and opens_dashboard(laptop)

    with_recovery_code(phone, email, codes[0])
    assert opens_dashboard(phone)
    with sessions() as s:  # the laptop turns it off with the secret's next code
        secret = s.scalar(sa.select(Account.totp_secret).where(Account.email == email))
    assert disable(laptop, pyotp.TOTP(secret).at(time.time() + 30)).status_code == 200
    assert not opens_dashboard(phone) and opens_dashboard(laptop)

    enrol(laptop)  # and the operator's reset signs every login out
    env = {"DATABASE_URL": settings.database_url} | ({"REDIS_URL": redis_url} if redis_url else {})
    out = run_kassa(env, "merchant", "2fa", email, "--disable")
    assert out.returncode == 0, out.stderr
    assert not opens_dashboard(laptop)


# ---- the secret being enrolled, and the recovery codes at rest -------------------------------


def test_the_secret_being_enrolled_is_not_in_the_cookie(web, sessions):
    email = merchant_with_password(sessions)
    browser = web()()
    log_in(browser, email)
    page = browser.get("/dashboard/settings/2fa").get_data(as_text=True)
    secret = re.search(r'id="totp-secret" class="value">([A-Z2-7]+)<', page).group(1)
    assert secret not in cookie_text(browser)
    again = browser.get("/dashboard/settings/2fa").get_data(as_text=True)
    assert secret in again  # the same secret until it is confirmed
    other = web()()
    other.set_cookie("session", browser.get_cookie("session").value)
    assert secret not in cookie_text(other)
    enrol(browser)


def test_recovery_codes_are_stored_salted_and_old_unsalted_ones_still_work(web, sessions):
    email = merchant_with_password(sessions)
    browser = web()()
    log_in(browser, email)
    _, codes = enrol(browser)
    with sessions() as s:
        stored = s.scalar(sa.select(Account.recovery_code_hashes).where(Account.email == email))
    assert len(stored) == 10 and len(set(stored)) == 10
    plain = {hashlib.sha256(c.replace("-", "").encode()).hexdigest() for c in codes}
    assert not plain & set(stored)  # no unsalted digest of any code
    assert not any(c.replace("-", "") in entry for c in codes for entry in stored)

    old = "abcde23456"  # a code stored before salting (an unsalted SHA-256): it still works, once
    with unit_of_work(sessions) as s:
        m = s.scalar(sa.select(Account).where(Account.email == email))
        m.recovery_code_hashes = [*m.recovery_code_hashes, hashlib.sha256(old.encode()).hexdigest()]
    with_recovery_code(web()(), email, "ABCDE-23456")
    with_recovery_code(web()(), email, codes[1])
    with sessions() as s:
        assert len(s.scalar(sa.select(Account.recovery_code_hashes).where(Account.email == email))) == 9
    late = web()()
    log_in(late, email)
    token = csrf_of(late.get("/dashboard/login/code"))
    assert late.post("/dashboard/login/code", data={"csrf_token": token, "recovery_code": old}).status_code == 401
