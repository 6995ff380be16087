"""The merchant dashboard through the Flask test client: login, throttling, cookie flags, CSRF."""

from __future__ import annotations

import re
import secrets

from kassa_common.accounts import merchants
from tests.support.dashboard import csrf_of, log_in, merchant_with_password


def test_pages_need_a_login(client):
    r = client.get("/dashboard/payments")
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/login")


def test_login_sets_an_httponly_lax_session_cookie(client, sessions):
    email = merchant_with_password(sessions)
    token = csrf_of(client.get("/dashboard/login"))
    r = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})
    assert r.status_code == 303
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert client.get("/dashboard/payments").status_code == 200


def test_login_without_csrf_token_is_refused(client, sessions):
    email = merchant_with_password(sessions)
    client.get("/dashboard/login")
    r = client.post("/dashboard/login", data={"email": email, "password": "s3cret-pass"})
    assert r.status_code == 403


def test_repeated_wrong_passwords_are_throttled(client, sessions):
    email = merchant_with_password(sessions)
    token = csrf_of(client.get("/dashboard/login"))
    codes = [
        client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "wrong-one"}).status_code
        for _ in range(6)
    ]
    assert codes == [401] * 5 + [429]
    right = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})
    assert right.status_code == 429
    assert re.search(
        r"Too many failed attempts\. Try again in (about \d+ minutes|\d+ seconds)\.", right.get_data(as_text=True)
    )


def test_failed_logins_are_counted_across_web_processes_through_redis(settings, engine, sessions):
    from kassa_api.app import create_app

    shared = settings.with_(redis_url="redis://127.0.0.1:6379/0")
    a, b = (create_app(shared, engine=engine).test_client() for _ in range(2))
    email = merchant_with_password(sessions)

    def wrong(client):
        token = csrf_of(client.get("/dashboard/login"))
        return client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "wrong-one"})

    codes = [wrong(c).status_code for c in (a, b, a, b, a)]
    assert codes == [401] * 5
    assert wrong(b).status_code == 429 and wrong(a).status_code == 429  # five between them, not five each


def test_a_form_without_csrf_token_gets_a_page_saying_why(client, sessions):
    email = merchant_with_password(sessions)
    client.get("/dashboard/login")
    page = client.post("/dashboard/login", data={"email": email, "password": "s3cret-pass"}).get_data(as_text=True)
    assert '<h1 class="error-title">Forbidden</h1>' in page
    assert "This form has expired or was not sent from this site." in page


def test_a_too_large_form_gets_the_plain_too_large_page(client):
    client.get("/dashboard/login")
    r = client.post("/dashboard/login", data={"email": "x" * (128 * 1024)})
    assert r.status_code == 413
    page = r.get_data(as_text=True)
    assert '<h1 class="error-title">Too large</h1>' in page and "<p>Too large</p>" in page


def test_head_of_the_signup_and_login_forms_answers_like_get_and_submits_nothing(client):
    for path in ("/dashboard/signup", "/dashboard/login"):
        r = client.head(path)
        assert r.status_code == 200 and r.get_data() == b""


def test_a_login_for_an_unknown_email_does_the_same_password_work_as_a_wrong_password(client, sessions, monkeypatch):
    """No account enumeration by timing: both failures run one password hash check."""
    calls = []
    real = merchants._hasher

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def verify(self, stored, password):
            calls.append(stored)
            return real.verify(stored, password)

    monkeypatch.setattr(merchants, "_hasher", Counting())
    email = merchant_with_password(sessions)
    token = csrf_of(client.get("/dashboard/login"))
    wrong = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "wrong-one"})
    unknown = client.post(
        "/dashboard/login",
        data={"csrf_token": token, "email": f"nobody-{secrets.token_hex(4)}@x.io", "password": "wrong-one"},
    )
    assert wrong.status_code == unknown.status_code == 401
    assert len(calls) == 2 and all(c.startswith("$argon2") for c in calls)


def test_the_root_leads_to_the_dashboard_and_its_login(client, sessions):
    r = client.get("/")
    assert r.status_code == 302 and r.headers["Location"].endswith("/dashboard/")
    assert client.get("/dashboard/").headers["Location"].endswith("/dashboard/login")
    log_in(client, merchant_with_password(sessions))
    assert client.get("/", follow_redirects=True).request.path == "/dashboard/overview"
