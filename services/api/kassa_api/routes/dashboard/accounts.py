"""Signing up, logging in and out, onboarding, the test/live switch, and the front door.

Failed logins are counted per client address and email, and per client address across
emails (rotating emails buys nothing), across web processes through Redis when REDIS_URL
is set (in each process otherwise, in bounded memory): after LOGIN_FAILURES for one email,
or LOGIN_FAILURES_PER_ADDRESS for any, within a LOGIN_WINDOW_SECONDS window, the login
form answers 429 until the window ends. Sign-ups are counted per client address the same
way (SIGNUPS_PER_HOUR), before any password is hashed.

A login is kept on the server (``kassa_common.accounts.logins``): the cookie holds a fresh random
id made at each login, and logging out revokes it there.
"""

from __future__ import annotations

import time
import uuid

from flask import Blueprint, g, redirect, request, session, url_for

from kassa_common.accounts import merchants, password_reset, stores, twofactor
from kassa_common.errors import DomainError
from kassa_common.models import Account
from kassa_api.actors import link_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.ratelimit import wait_text
from kassa_api.routes.dashboard.common import login_required, render
from kassa_api.routes.dashboard.forms import FormError, Problems, refusal

bp = Blueprint("accounts", __name__)
SECOND_STEP_SECONDS = 300  # the code must follow the password within this
LOGIN_FAILURES, LOGIN_WINDOW_SECONDS = 5, 300
SIGNUP_FIELDS = ("email", "password", "business_name")
THROTTLED = "Too many attempts from your address. Wait a while and try again."


def new_password_problems(
    new: str, confirm: str, field: str = "password", confirm_field: str = "confirm_password"
) -> Problems:
    """A new password's problems: its rules, and the second typing matching the first."""
    problems = Problems()
    problems.check(field, merchants.check_new_password, new)
    if new != confirm:
        problems.add(confirm_field, "the two passwords do not match")
    return problems


def authenticated(email: str, password: str) -> Account | None:
    """The account with this email and password, or None: a wrong email and a wrong password look alike."""
    account = stores.find_account(db(), email)
    if account is None:
        merchants.check_password(None, password)  # as slow as a wrong password: no account enumeration by timing
        return None
    return account if merchants.check_password(account.password_hash, password) else None


@bp.route("/signup", methods=["GET", "POST"])
def signup():
    if request.method != "POST":  # GET or HEAD
        return render("signup.html")
    form = request.form
    if not deps().signups.hit(f"signup:{request.remote_addr}").allowed:
        return render("signup.html", 429, error=THROTTLED, email=form.get("email", "")[:320])
    try:
        with transaction() as s:
            problems = Problems()  # every problem at once, each beside its field
            problems.check("email", merchants.check_new_email, s, form.get("email", "")[:320])
            problems.check("password", merchants.check_new_password, form.get("password", ""))
            problems.check("business_name", merchants.check_business_name, form.get("business_name"))
            problems.raise_any()
            merchant = merchants.create_merchant(
                s, form.get("email", ""), form.get("password", ""), form.get("business_name")
            )
            merchants.notify_operator_of_signup(s, merchant, deps().settings.web.operator_email)
            email = merchant.email
    except (FormError, DomainError) as exc:
        return render("signup.html", 422, **refusal(exc, SIGNUP_FIELDS))
    return render("signup_done.html", email=email)


@bp.route("/forgot", methods=["GET", "POST"])
def forgot():
    """Ask for a reset link: the same answer whether or not the email has an account;
    counted per client address with the sign-ups' limit (SIGNUPS_PER_HOUR), and per email
    the same (beyond it nothing more is sent, and the answer does not say so)."""
    if request.method != "POST":  # GET or HEAD
        return render("forgot.html")
    email = request.form.get("email", "").strip()[:320]
    if not deps().signups.hit(f"reset:{request.remote_addr}").allowed:
        wait = wait_text(deps().signups)
        return render(
            "forgot.html", 429, error=f"Too many requests from your address. Try again in {wait}.", email=email
        )
    if email and deps().signups.hit(f"reset-email:{email.lower()}").allowed:
        settings = deps().settings
        with transaction() as s:
            password_reset.request_reset(
                s, email, secret_key=settings.web.secret_key, dashboard_url=settings.dashboard_url
            )
    return render("forgot.html", sent=True, email=email)


@bp.route("/reset/<token>", methods=["GET", "POST"])
def reset_password(token: str):
    """The emailed link: choose a new password. Opening it changes nothing (a mail
    scanner's prefetch is harmless); a successful form signs out every login."""
    secret = deps().settings.web.secret_key
    if request.method != "POST":  # GET or HEAD
        valid = password_reset.account_of(db(), token, secret) is not None
        return render("reset.html", 200 if valid else 404, valid=valid)
    form = request.form
    try:
        with transaction() as s:
            account = password_reset.account_of(s, token, secret, lock=True)
            if account is None:
                return render("reset.html", 404, valid=False)
            new_password_problems(form.get("password", ""), form.get("confirm_password", "")).raise_any()
            password_reset.reset(
                s,
                account,
                form.get("password", ""),
                form.get("confirm_password", ""),
                actor=link_actor(f"the password reset link of {account.email}"),
            )
            account_id = account.id
    except (FormError, DomainError) as exc:
        return render("reset.html", 400, valid=True, **refusal(exc, ("password", "confirm_password")))
    deps().logins.revoke_all(account_id)
    session.clear()
    return render("login.html", notice="Your password is changed and every login was signed out. Log in with it now.")


@bp.route("/login", methods=["GET", "POST"])
def login():
    if request.method != "POST":  # GET or HEAD
        return render("login.html")
    email = request.form.get("email", "").strip().lower()
    email = email[:320]
    key, address_key = f"login:{request.remote_addr}|{email}", f"login-address:{request.remote_addr}"
    failures, by_address = deps().login_failures, deps().login_failures_by_address
    if failures.exceeded(key) or by_address.exceeded(address_key):
        wait = wait_text(failures if failures.exceeded(key) else by_address)
        return render("login.html", 429, error=f"Too many failed attempts. Try again in {wait}.", email=email)
    account = authenticated(email, request.form.get("password", ""))
    if account is None:
        failures.hit(key)
        by_address.hit(address_key)
        return render("login.html", 401, error="Wrong email or password.", email=email)
    if not stores.stores_of(db(), account.id):  # no store it can open (not activated yet, or banned)
        return render(
            "login.html",
            403,
            error="This account is not activated yet: an operator of this server activates new accounts.",
            email=email,
        )
    failures.clear(key)
    if account.totp_enabled_at is not None:  # the password was right: now the second factor
        session.clear()
        session.update(pending_2fa=str(account.id), pending_until=time.time() + SECOND_STEP_SECONDS)
        return redirect(url_for("dashboard.accounts.login_code"), 303)
    start_login(account)
    return redirect(url_for("dashboard.accounts.home"), 303)


@bp.route("/login/code", methods=["GET", "POST"])
def login_code():
    """The login's second step: a code of the account's authenticator app, or a recovery code.
    Failures are counted per account (LOGIN_FAILURES per window, then 429) and per address."""
    pending, until = session.get("pending_2fa"), session.get("pending_until", 0)
    if not isinstance(pending, str) or not isinstance(until, (int, float)) or until < time.time():
        session.clear()
        return redirect(url_for("dashboard.accounts.login"), 303)
    if request.method != "POST":  # GET or HEAD
        return render("login_code.html")
    key, address_key = f"2fa:{pending}", f"login-address:{request.remote_addr}"
    failures, by_address = deps().login_failures, deps().login_failures_by_address
    if failures.exceeded(key) or by_address.exceeded(address_key):
        wait = wait_text(failures if failures.exceeded(key) else by_address)
        return render("login_code.html", 429, error=f"Too many wrong codes. Try again in {wait}.")
    code, recovery = request.form.get("code", "")[:20], request.form.get("recovery_code", "")[:40]
    with transaction() as s:
        account = s.get(Account, uuid.UUID(pending))
        ok = account is not None and (
            twofactor.check_code(s, account, code)
            if code.strip()
            else twofactor.use_recovery_code(s, account, recovery)
        )
    if not ok or account is None:
        failures.hit(key)
        by_address.hit(address_key)
        return render("login_code.html", 401, error="That code is not right. Try the current one from your app.")
    failures.clear(key)
    start_login(account)
    return redirect(url_for("dashboard.accounts.home"), 303)


def start_login(account: Account) -> None:
    """A new server-side login and a new cookie: nothing of the session before it survives
    (the store opened is the account's first again)."""
    token = deps().logins.create(account.id, request.user_agent.string or None, request.remote_addr)
    session.clear()
    session.update(sid=token, mode="test")


@bp.post("/logout")
def logout():
    token = session.get("sid")
    login = deps().logins.get(token) if isinstance(token, str) else None
    if login is not None:
        deps().logins.revoke(login.account_id, login.ref)
    session.clear()
    return redirect(url_for("dashboard.accounts.login"), 303)


@bp.get("/")
@login_required
def home():
    return redirect(url_for("dashboard.overview.index"), 303)


@bp.route("/onboarding", methods=["GET", "POST"])
@login_required
def onboarding():
    if request.method != "POST":  # GET or HEAD
        return render("onboarding.html")
    name = request.form.get("business_name", "").strip()
    if not name or len(name) > merchants.MAX_BUSINESS_NAME:
        refused = FormError({"business_name": "Enter your business name (up to 200 characters)."})
        return render("onboarding.html", 422, **refused.context(["business_name"]))
    with transaction():
        g.merchant.business_name = name
    return redirect(url_for("dashboard.overview.index"), 303)


@bp.post("/mode")
@login_required
def switch_mode():
    """Switch test/live for this browser session, then go back to the page it came from."""
    session["mode"] = "live" if request.form.get("mode") == "live" else "test"
    back = request.form.get("next") or ""
    return redirect(back if back.startswith("/dashboard") else url_for("dashboard.payments.index"), 303)
