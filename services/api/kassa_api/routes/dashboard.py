"""The merchant dashboard: sign up, log in/out, onboarding, API keys, payments, test/live switch."""
from __future__ import annotations

import time
import uuid
from collections import defaultdict, deque
from functools import wraps

import sqlalchemy as sa
from flask import Blueprint, g, redirect, request, session, url_for
from werkzeug.exceptions import HTTPException

from kassa_api import csrf
from kassa_api.deps import db, deps, transaction
from kassa_api.handlers import payments as h
from kassa_api.handlers.common import page_meta
from kassa_common import accounts
from kassa_common import payments as sm
from kassa_common.errors import DomainError
from kassa_api.web import error_page, page
from kassa_common.chains.rates import from_base_units
from kassa_common.models import ApiKey, Event, Merchant, Transfer, WebhookDelivery, WebhookEndpoint

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")
csrf.protect(bp)
PAGE_SIZE = 20
MAX_FAILURES, FAILURE_WINDOW = 5, 300.0
_failures: dict[str, deque] = defaultdict(deque)


@bp.record_once
def _cookie_settings(state) -> None:
    https = state.app.extensions["kassa"].settings.checkout_url.startswith("https://")
    state.app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_SECURE=https)


@bp.errorhandler(HTTPException)
def _http_error(exc: HTTPException):
    return error_page(exc.code or 500, exc.description if exc.code == 403 else None)


def throttled(key: str) -> bool:
    now = time.monotonic()
    hits = _failures[key]
    while hits and hits[0] < now - FAILURE_WINDOW:
        hits.popleft()
    return len(hits) >= MAX_FAILURES


def login_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        merchant = db().get(Merchant, uuid.UUID(session["merchant_id"])) if session.get("merchant_id") else None
        if merchant is None or merchant.banned or not merchant.activated:
            session.pop("merchant_id", None)
            return redirect(url_for("dashboard.login"), 303)
        g.merchant = merchant
        g.test_mode = session.get("mode", "test") == "test"
        if not merchant.business_name and view.__name__ != "onboarding":
            return redirect(url_for("dashboard.onboarding"), 303)
        return view(*args, **kwargs)
    return wrapped


def render(template: str, status: int = 200, /, **context):
    """A dashboard page; ``status`` is positional-only so pages may use a ``status`` variable."""
    return page(f"dashboard/{template}", status, merchant=g.get("merchant"), test_mode=g.get("test_mode", True),
                **context)


def owner() -> h.Owner:
    return h.Owner(g.merchant.id, g.test_mode, g.merchant.payment_lifetime_minutes
                   or deps().settings.payment_lifetime_minutes)


@bp.route("/signup", methods=["GET", "POST"])
def signup():
    if request.method == "GET":
        return render("signup.html")
    form = request.form
    try:
        with transaction() as s:
            accounts.create_merchant(s, form.get("email", ""), form.get("password", ""), form.get("business_name"))
    except DomainError as exc:
        return render("signup.html", 422, error=exc.message, email=form.get("email", ""))
    return render("login.html", notice="Account created. You can log in once an operator has activated it.")


@bp.route("/login", methods=["GET", "POST"])
def login():
    if request.method == "GET":
        return render("login.html")
    email = request.form.get("email", "").strip().lower()
    key = f"{request.remote_addr}|{email}"
    if throttled(key):
        return render("login.html", 429, error="Too many failed attempts. Wait a few minutes and try again.")
    merchant = db().scalar(sa.select(Merchant).where(sa.func.lower(Merchant.email) == email))
    if merchant is None or not accounts.check_password(merchant.password_hash, request.form.get("password", "")):
        _failures[key].append(time.monotonic())
        return render("login.html", 401, error="Wrong email or password.", email=email)
    if merchant.banned or not merchant.activated:
        return render("login.html", 403, error="This account is not activated yet.", email=email)
    _failures.pop(key, None)
    session.clear()
    session.update(merchant_id=str(merchant.id), mode="test")
    return redirect(url_for("dashboard.home"), 303)


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("dashboard.login"), 303)


@bp.get("/")
@login_required
def home():
    return redirect(url_for("dashboard.payments"), 303)


@bp.route("/onboarding", methods=["GET", "POST"])
@login_required
def onboarding():
    if request.method == "POST":
        name = request.form.get("business_name", "").strip()
        if not name or len(name) > 200:
            return render("onboarding.html", 422, error="Enter your business name (up to 200 characters).")
        with transaction():
            g.merchant.business_name = name
        return redirect(url_for("dashboard.payments"), 303)
    return render("onboarding.html")


@bp.post("/mode")
@login_required
def switch_mode():
    session["mode"] = "live" if request.form.get("mode") == "live" else "test"
    return redirect(request.form.get("next") if (request.form.get("next") or "").startswith("/dashboard")
                    else url_for("dashboard.payments"), 303)


def _keys():
    return db().scalars(sa.select(ApiKey).where(ApiKey.merchant_id == g.merchant.id)
                        .order_by(ApiKey.created_at.desc())).all()


@bp.route("/keys", methods=["GET", "POST"])
@login_required
def keys():
    new_key, error, status = None, None, 200
    if request.method == "POST":
        mode = request.form.get("mode", "test")
        try:
            with transaction() as s:
                new_key = accounts.create_key(s, g.merchant.id, mode, request.form.getlist("scopes"),
                                              request.form.get("name", "").strip()[:100] or None).key
        except DomainError as exc:
            error, status = exc.message, 422
    return render("keys.html", status, keys=_keys(), new_key=new_key, error=error, scopes=accounts.SCOPES)


@bp.post("/keys/<key_id>/revoke")
@login_required
def revoke_key(key_id: str):
    try:
        with transaction() as s:
            accounts.revoke_key(s, g.merchant.id, uuid.UUID(key_id))
    except (ValueError, DomainError):
        return error_page(404)
    return redirect(url_for("dashboard.keys"), 303)


@bp.get("/payments")
@login_required
def payments():
    status = request.args.get("status") if request.args.get("status") in sm.STATUSES else None
    search = request.args.get("search", "").strip()[:200] or None
    page_no = max(request.args.get("page", 1, type=int) or 1, 1)
    rows, total = h.list_payments(db(), owner(), page=page_no, page_size=PAGE_SIZE, status=status, search=search)
    return render("payments.html", rows=rows, total=total, page=page_no, pages=page_meta(page_no, PAGE_SIZE, total)["pages"],
                  status=status, search=search or "", statuses=sm.STATUSES)


@bp.get("/payments/<ref>")
@login_required
def payment_detail(ref: str):
    try:
        payment = h.find_payment(db(), owner(), ref)
    except DomainError:
        return error_page(404, "No such payment in this mode.")
    events = db().scalars(sa.select(Event).where(Event.payment_id == payment.id)
                          .order_by(Event.created_at, Event.id)).all()
    transfers = db().scalars(sa.select(Transfer).where(Transfer.payment_id == payment.id)
                             .order_by(Transfer.created_at)).all()
    deliveries = db().execute(
        sa.select(WebhookDelivery, WebhookEndpoint.url).join(WebhookEndpoint)
        .where(WebhookDelivery.event_id.in_([e.id for e in events])).order_by(WebhookDelivery.created_at)).all()
    return render("payment.html", payment=payment, events=events, transfers=transfers, deliveries=deliveries,
                  cancelable=payment.status == sm.PENDING, units=from_base_units)


@bp.post("/payments/<ref>/cancel")
@login_required
def payment_cancel(ref: str):
    try:
        with transaction() as s:
            payment = h.cancel_payment(s, owner(), ref)
    except DomainError as exc:
        if exc.code == "NOT_FOUND":
            return error_page(404, "No such payment in this mode.")
        return error_page(409, exc.message)
    return redirect(url_for("dashboard.payment_detail", ref=payment.short_id), 303)


from kassa_api.routes import dashboard_manage  # noqa: E402,F401  (adds its pages to this blueprint)
