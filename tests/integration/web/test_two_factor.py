"""Two-factor sign-in through the dashboard (the Flask client; the browser test drives the
same pages in Chromium): enrol, sign in with a code, a recovery code, a wrong code, the
throttle, REQUIRE_2FA and the operator's reset."""

from __future__ import annotations

import hashlib
import re
import time

import pyotp

from kassa_common.accounts import twofactor
from kassa_api.app import create_app
from tests.support.cli import run_kassa
from tests.support.dashboard import csrf_of, merchant_with_password


def log_in(client, email: str) -> object:
    token = csrf_of(client.get("/dashboard/login"))
    return client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})


def enrol(client) -> tuple[str, list[str]]:
    page = client.get("/dashboard/settings/2fa").get_data(as_text=True)
    assert 'src="data:image/svg+xml' in page
    secret = re.search(r'id="totp-secret" class="value">([A-Z2-7]+)<', page).group(1)
    token = csrf_of(client.get("/dashboard/settings/2fa"))
    wrong = client.post(
        "/dashboard/settings/2fa/enable", data={"csrf_token": token, "password": "s3cret-pass", "code": "000000"}
    )
    assert wrong.status_code == 400
    r = client.post(
        "/dashboard/settings/2fa/enable",
        data={"csrf_token": token, "password": "s3cret-pass", "code": pyotp.TOTP(secret).now()},
    )
    body = r.get_data(as_text=True)
    assert r.status_code == 200 and "Two-factor sign-in is <strong>on</strong>" in body
    codes = re.findall(r"<li><code>([a-z2-9]{5}-[a-z2-9]{5})</code></li>", body)
    assert len(codes) == 10
    return secret, codes


def next_code(secret: str) -> str:
    """A code of the step after the one used last (each step's code is taken once)."""
    totp = pyotp.TOTP(secret)
    return totp.at(time.time() + 30)


def test_enrol_then_sign_in_with_a_code_a_recovery_code_and_refuse_a_wrong_one(app, sessions):
    email = merchant_with_password(sessions)
    browser = app.test_client()
    assert log_in(browser, email).status_code == 303
    secret, codes = enrol(browser)

    second = app.test_client()
    r = log_in(second, email)
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/login/code")
    assert second.get("/dashboard/payments").status_code == 303  # the password alone opens nothing
    token = csrf_of(second.get("/dashboard/login/code"))
    assert second.post("/dashboard/login/code", data={"csrf_token": token, "code": "123456"}).status_code == 401
    ok = second.post("/dashboard/login/code", data={"csrf_token": token, "code": next_code(secret)})
    assert ok.status_code == 303 and second.get("/dashboard/payments").status_code == 200

    replay = app.test_client()  # the same code again: refused
    log_in(replay, email)
    token = csrf_of(replay.get("/dashboard/login/code"))
    assert (
        replay.post("/dashboard/login/code", data={"csrf_token": token, "code": next_code(secret)}).status_code == 401
    )

    lost = app.test_client()
    log_in(lost, email)
    token = csrf_of(lost.get("/dashboard/login/code"))
    assert (
        lost.post("/dashboard/login/code", data={"csrf_token": token, "recovery_code": codes[0].upper()}).status_code
        == 303
    )
    assert lost.get("/dashboard/payments").status_code == 200
    again = app.test_client()
    log_in(again, email)
    token = csrf_of(again.get("/dashboard/login/code"))
    assert (
        again.post("/dashboard/login/code", data={"csrf_token": token, "recovery_code": codes[0]}).status_code == 401
    )  # once only


def test_wrong_codes_are_throttled(app, sessions):
    email = merchant_with_password(sessions)
    browser = app.test_client()
    log_in(browser, email)
    secret, _ = enrol(browser)
    attacker = app.test_client()
    log_in(attacker, email)
    token = csrf_of(attacker.get("/dashboard/login/code"))
    codes = [
        attacker.post("/dashboard/login/code", data={"csrf_token": token, "code": f"{n:06d}"}).status_code
        for n in range(6)
    ]
    assert codes[-1] == 429 and codes[:5].count(401) >= 4
    right = attacker.post("/dashboard/login/code", data={"csrf_token": token, "code": next_code(secret)})
    assert right.status_code == 429


def test_require_2fa_sends_every_merchant_to_enrol_first(settings, engine, sessions):
    app = create_app(settings.with_(web={"require_2fa": True}), engine=engine)
    email = merchant_with_password(sessions)
    browser = app.test_client()
    log_in(browser, email)
    r = browser.get("/dashboard/payments")
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/settings/2fa")
    enrol(browser)
    assert browser.get("/dashboard/payments").status_code == 200


def test_the_operator_turns_it_off(app, sessions, settings):
    email = merchant_with_password(sessions)
    browser = app.test_client()
    log_in(browser, email)
    enrol(browser)
    out = run_kassa({"DATABASE_URL": settings.database_url}, "merchant", "2fa", email, "--disable")
    assert out.returncode == 0, out.stderr
    assert "two-factor sign-in off" in out.stdout
    r = log_in(app.test_client(), email)
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/")


def test_a_code_of_a_neighbouring_step_counts_and_others_do_not():
    secret = twofactor.new_secret()
    totp, now = pyotp.TOTP(secret), time.time()
    assert twofactor.matching_step(secret, totp.at(now), now) == int(now // 30)
    assert twofactor.matching_step(secret, totp.at(now - 30), now) is not None
    assert twofactor.matching_step(secret, totp.at(now - 120), now) is None
    assert twofactor.matching_step(secret, "12a456", now) is None


def test_recovery_codes_are_stored_salted_and_read_in_either_form():
    code = "abcde-23456"
    one, two = twofactor.hash_recovery_code(code), twofactor.hash_recovery_code(code)
    assert one != two and one.startswith("pbkdf2_sha256$")  # a salt of its own each time
    assert twofactor.matches_recovery_code(one, "ABCDE23456") and not twofactor.matches_recovery_code(
        one, "abcde-23457"
    )
    assert twofactor.matches_recovery_code(hashlib.sha256(b"abcde23456").hexdigest(), code)  # stored before salting
    for broken in (
        "",
        "pbkdf2_sha256$x$00$00",
        "pbkdf2_sha256$5000$zz$00",
        "md5$1$00$00",
        "pbkdf2_sha256$9999999$00$00",
    ):
        assert not twofactor.matches_recovery_code(broken, code)
