"""Password reset by email and the operator's sign-up email (DESIGN.md section 10), as a
merchant meets them: the login page's "Forgot your password?", the same answer whatever
the email, a link through a real SMTP server that works once and for an hour, and every
login signed out by the new password."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit

import itsdangerous.timed
import pytest
import sqlalchemy as sa

from kassa_common.models import Notification
from kassa_api.app import create_app
from kassa_webhook_sender.email.main import build
from kassa_webhook_sender.engine.retry import RetryPolicy
from tests.support.bus import private_topology
from tests.support.cli import cli_runner
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password
from tests.support.smtp import smtp_server
from tests.support.wait import until

DASHBOARD = "https://kassa.example/dashboard"
OPERATOR = "operator@kassa.example"
NEW_PASSWORD = "a-new-pass-42"


@pytest.fixture
def configured(settings):
    """A server that sends email (the web app only writes it; the notifier of ``inbox`` sends it)."""
    return settings.with_(
        dashboard_url=DASHBOARD,
        web={"operator_email": OPERATOR, "signups_per_hour": 3},
        sender={"smtp_url": "smtp://127.0.0.1:25"},
    )


@pytest.fixture
def app(configured, engine):
    return create_app(configured, engine=engine)


@pytest.fixture
def inbox(configured, engine):
    """A notifier sending to a real SMTP server: its inbox."""
    with smtp_server() as (mails, port), private_topology(configured.rabbitmq_url) as (prefix, _):
        settings = configured.with_(bus_prefix=prefix, sender={"smtp_url": f"smtp://127.0.0.1:{port}"})
        n = build(settings, engine=engine, retry=RetryPolicy.from_schedule((0.3,)), poll_interval=0.1).start()
        try:
            yield mails
        finally:
            n.stop()


def ask_reset(client, email: str):
    token = csrf_of(client.get("/dashboard/forgot"))
    return client.post("/dashboard/forgot", data={"csrf_token": token, "email": email})


def reset_link(inbox, email: str) -> str:
    mail = until(lambda: inbox.to(email), timeout=20, message="the password reset email")[-1]
    body = mail.get_body(("plain",)).get_content()
    assert "Reset" in mail["Subject"]
    return urlsplit(re.search(rf"{re.escape(DASHBOARD)}/reset/\S+", body).group(0)).path


def choose(client, path: str, password: str = NEW_PASSWORD, confirm: str | None = None):
    page = client.get(path)
    if page.status_code != 200:
        return page
    data = {"csrf_token": csrf_of(page), "password": password, "confirm_password": confirm or password}
    return client.post(path, data=data)


def can_log_in(client, email: str, password: str) -> bool:
    token = csrf_of(client.get("/dashboard/login"))
    r = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": password})
    return r.status_code == 303


def test_the_login_page_leads_to_a_reset_that_works_once_and_signs_everyone_out(app, sessions, inbox):
    email = merchant_with_password(sessions)
    laptop, phone = app.test_client(), app.test_client()
    log_in(laptop, email)
    log_in(phone, email)

    stranger = app.test_client()
    assert 'href="/dashboard/forgot"' in stranger.get("/dashboard/login").get_data(as_text=True)
    r = ask_reset(stranger, email)
    assert r.status_code == 200 and "If an account exists" in r.get_data(as_text=True)
    path = reset_link(inbox, email)

    assert stranger.get(path).status_code == 200  # opening the link changes nothing
    assert choose(stranger, path, confirm="something-else").status_code == 400  # mistyped: nothing changes
    assert choose(stranger, path, password="short").status_code == 400  # the sign-up's rule
    r = choose(stranger, path)
    assert r.status_code == 200 and "every login was signed out" in r.get_data(as_text=True)

    for browser in (laptop, phone):  # every existing login is gone
        assert browser.get("/dashboard/payments").status_code == 303
    assert not can_log_in(app.test_client(), email, PASSWORD)
    assert can_log_in(app.test_client(), email, NEW_PASSWORD)

    # the link worked once: used again, it is refused and nothing changes
    again = app.test_client()
    r = choose(again, path, password="third-pass-99")
    assert r.status_code == 404 and "This link no longer works" in r.get_data(as_text=True)
    assert (
        again.post(
            path,
            data={
                "csrf_token": csrf_of(again.get("/dashboard/login")),
                "password": "x" * 9,
                "confirm_password": "x" * 9,
            },
        ).status_code
        == 404
    )
    assert can_log_in(app.test_client(), email, NEW_PASSWORD)


def test_a_link_older_than_an_hour_is_refused(app, sessions, inbox, monkeypatch):
    email = merchant_with_password(sessions)
    client = app.test_client()
    ask_reset(client, email)
    path = reset_link(inbox, email)
    assert client.get(path).status_code == 200
    monkeypatch.setattr(itsdangerous.timed.TimestampSigner, "get_timestamp", lambda self: int(time.time()) + 3601)
    r = client.get(path)
    assert r.status_code == 404 and "older than an hour" in r.get_data(as_text=True)
    token = csrf_of(client.get("/dashboard/login"))
    data = {"csrf_token": token, "password": NEW_PASSWORD, "confirm_password": NEW_PASSWORD}
    assert client.post(path, data=data).status_code == 404
    monkeypatch.undo()
    assert can_log_in(app.test_client(), email, PASSWORD)


def test_an_unknown_email_gets_the_same_answer_and_no_email(app, sessions):
    known = merchant_with_password(sessions)
    unknown = "nobody-here@example.com"
    a, b = ask_reset(app.test_client(), known), ask_reset(app.test_client(), unknown)
    assert a.status_code == b.status_code == 200

    def answer(r, email):
        html = r.get_data(as_text=True).replace(email, "EMAIL")
        return re.sub(r'name="csrf_token" value="[^"]+"', "", html)

    assert answer(a, known) == answer(b, unknown)
    with sessions() as s:
        recipients = set(s.scalars(sa.select(Notification.recipient).where(Notification.kind == "password_reset")))
    assert known in recipients and unknown not in recipients


def test_reset_requests_are_throttled_per_client_address(app, sessions):
    client = app.test_client()
    for n in range(3):  # SIGNUPS_PER_HOUR=3
        assert ask_reset(client, f"someone-{n}@example.com").status_code == 200
    r = ask_reset(client, "someone-else@example.com")
    assert r.status_code == 429 and "Too many requests" in r.get_data(as_text=True)
    assert "someone-else@example.com" in r.get_data(as_text=True)  # what was typed is kept


def test_a_forged_or_huge_token_is_a_404_page(app):
    client = app.test_client()
    for token in ("not-a-token", "eyJtIjoiMSJ9.Zz.Zz", "x" * 600):
        r = client.get(f"/dashboard/reset/{token}")
        assert r.status_code == 404 and "This link no longer works" in r.get_data(as_text=True)


def test_a_sign_up_says_what_happens_next_and_emails_the_operator(app, inbox, sessions):
    client = app.test_client()
    email = "new-shop@example.com"
    token = csrf_of(client.get("/dashboard/signup"))
    r = client.post(
        "/dashboard/signup",
        data={"csrf_token": token, "email": email, "password": PASSWORD, "business_name": "New Shop"},
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 200 and "waiting for activation" in page and "operator" in page and email in page
    mail = until(lambda: inbox.to(OPERATOR), timeout=20, message="the operator's sign-up email")[0]
    body = mail.get_body(("plain",)).get_content()
    assert email in mail["Subject"] and f"kassa merchant activate {email}" in body and "New Shop" in body
    assert not inbox.to(email)  # the merchant is not emailed by the sign-up


def test_without_an_operator_address_a_sign_up_emails_nobody(settings, engine, sessions):
    client = create_app(settings.with_(web={"operator_email": None}), engine=engine).test_client()
    email = "quiet-shop@example.com"
    token = csrf_of(client.get("/dashboard/signup"))
    r = client.post("/dashboard/signup", data={"csrf_token": token, "email": email, "password": PASSWORD})
    assert r.status_code == 200
    with sessions() as s:
        rows = s.scalars(
            sa.select(Notification).where(Notification.kind == "signup", Notification.body_text.contains(email))
        )
        assert not list(rows)


def test_the_operator_activating_a_sign_up_emails_the_merchant_once(
    app, inbox, sessions, database_url, monkeypatch, capsys
):
    client = app.test_client()
    email = "soon-active@example.com"
    token = csrf_of(client.get("/dashboard/signup"))
    data = {"csrf_token": token, "email": email, "password": PASSWORD, "business_name": "Soon Active"}
    assert client.post("/dashboard/signup", data=data).status_code == 200
    kassa = cli_runner(
        monkeypatch, capsys, {"DATABASE_URL": database_url, "KASSA_ENV": "development", "DASHBOARD_URL": DASHBOARD}
    )

    assert kassa("merchant", "activate", email)[0] == 0
    mail = until(lambda: inbox.to(email), timeout=20, message="the activation email")[0]
    body = mail.get_body(("plain",)).get_content()
    assert mail["Subject"] == "Your Kassa account is active"
    assert f"Your Kassa account is active — sign in at {DASHBOARD}" in body
    assert can_log_in(app.test_client(), email, PASSWORD)

    assert kassa("merchant", "activate", email)[0] == 0  # already active: no second email
    with sessions() as s:
        sent = s.scalars(
            sa.select(Notification).where(Notification.kind == "activated", Notification.recipient == email)
        )
        assert len(list(sent)) == 1


def test_the_operator_prints_a_reset_link_that_works_once_for_a_merchant_without_email(
    app, sessions, database_url, monkeypatch, capsys
):
    """No SMTP server, a merchant locked out: ``kassa merchant reset-password EMAIL`` prints the
    link the email would carry (one use, an hour), and the password is unchanged until it is used."""
    email = merchant_with_password(sessions)
    laptop = app.test_client()
    log_in(laptop, email)
    kassa = cli_runner(
        monkeypatch, capsys, {"DATABASE_URL": database_url, "KASSA_ENV": "development", "DASHBOARD_URL": DASHBOARD}
    )
    code, out, err = kassa("--json", "merchant", "reset-password", email.upper())
    assert code == 0, err
    printed = json.loads(out)
    assert printed["email"] == email and printed["valid_minutes"] == 60
    assert printed["reset_url"].startswith(f"{DASHBOARD}/reset/")
    assert can_log_in(app.test_client(), email, PASSWORD)  # nothing changed yet

    code, out, _ = kassa("merchant", "reset-password", email)
    assert code == 0 and out.startswith(f"{DASHBOARD}/reset/") and "works once, within 60 minutes" in out
    path = urlsplit(printed["reset_url"]).path
    r = choose(app.test_client(), path)
    assert r.status_code == 200 and "every login was signed out" in r.get_data(as_text=True)
    assert laptop.get("/dashboard/payments").status_code == 303
    assert can_log_in(app.test_client(), email, NEW_PASSWORD)
    assert choose(app.test_client(), path, password="third-pass-99").status_code == 404  # once
    assert choose(app.test_client(), urlsplit(out.split()[0]).path).status_code == 404  # every earlier link dies

    code, _, err = kassa("merchant", "reset-password", "nobody-here@example.com")
    assert code == 1 and "nobody-here@example.com" in err


def test_without_smtp_the_pages_promise_no_email(configured, engine, sessions):
    """A server without SMTP_URL sends no email: the forgot page says so and whom to ask
    instead of offering a link that never comes; the notifications page says nothing is sent.
    With SMTP_URL the same pages offer and promise the email."""
    quiet = create_app(configured.with_(sender={"smtp_url": None}), engine=engine).test_client()
    page = quiet.get("/dashboard/forgot").get_data(as_text=True)
    assert "sends no email" in page and "kassa merchant reset-password" in page
    assert "Email me a link" not in page and "we send" not in page
    with quiet.session_transaction() as sess:
        sess["_csrf"] = "t"
    answer = quiet.post("/dashboard/forgot", data={"csrf_token": "t", "email": "a@example.com"})
    assert "we sent" not in answer.get_data(as_text=True) and "sends no email" in answer.get_data(as_text=True)
    email = merchant_with_password(sessions)
    log_in(quiet, email)
    assert "sends no email" in quiet.get("/dashboard/notifications").get_data(as_text=True)

    mailing = create_app(configured, engine=engine).test_client()
    page = mailing.get("/dashboard/forgot").get_data(as_text=True)
    assert "Email me a link" in page and "sends no email" not in page
    answer = ask_reset(mailing, "a@example.com").get_data(as_text=True)
    assert "we sent it an email" in answer
    log_in(mailing, email)
    assert "sends no email" not in mailing.get("/dashboard/notifications").get_data(as_text=True)
