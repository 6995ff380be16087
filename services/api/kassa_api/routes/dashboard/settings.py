"""Merchant settings: how long new payments stay open, how far short of the amount a
confirmed payment may fall and still complete, and the pricing terms (the rate spread and
how long a quoted rate holds: ``kassa_common.pricing.terms``).

The page also lists the signed-in account's active logins (browser, address, last seen) with a
button to revoke each, and changes the password: that revokes every other login. Two-factor
sign-in is turned on (the password and a code of the new secret) and off (the password and
a current code) on its own page; either change revokes every other login too. The password
and codes asked again here are step-up checks, throttled like the login (``common.step_up``).

They belong to the merchant, not to a mode, so the page looks the same switched to test
or live. The rules and the writing live in ``kassa_common.accounts.merchants``, which
``kassa merchant settings`` uses too; a refused value re-renders the form with the reason
(400) and writes nothing.
"""

from __future__ import annotations

import secrets

from flask import Blueprint, g, redirect, request, session, url_for

from kassa_common.accounts import merchants, twofactor
from kassa_common.errors import DomainError
from kassa_common.pricing import terms
from kassa_api.actors import dashboard_actor
from kassa_api.deps import deps, transaction
from kassa_api.routes.dashboard.accounts import new_password_problems
from kassa_api.routes.dashboard.common import THROTTLED, login_required, render, step_up, step_up_wait
from kassa_api.routes.dashboard.forms import FormError, Problems, refusal

bp = Blueprint("settings", __name__)
FIELDS = ("payment_lifetime", "underpayment_tolerance", "rate_spread_pct", "rate_lock_minutes")
PASSWORD_FIELDS = ("current_password", "new_password", "confirm_password")


def _page(status: int = 200, /, *, typed: dict[str, str] | None = None, **context):
    """The form with the settings in force, or with what was ``typed`` when it was refused."""
    default = deps().settings.payment_lifetime_minutes
    current = merchants.merchant_settings(g.merchant, default)
    pricing = terms.terms_of(g.merchant)
    values = typed or {
        "payment_lifetime": "" if current.lifetime_is_default else str(current.payment_lifetime_minutes),
        "underpayment_tolerance": current.tolerance_percent,
        "rate_spread_pct": pricing.spread_text,
        "rate_lock_minutes": str(pricing.lock_minutes or ""),
    }
    return render(
        "settings.html",
        status,
        current=current,
        logins=deps().logins.active(g.account.id),
        this_login=g.login.ref,
        values=values,
        default_lifetime=default,
        pricing=pricing,
        max_spread=terms.MAX_SPREAD,
        max_lock=terms.MAX_LOCK,
        min_lifetime=merchants.MIN_LIFETIME,
        max_lifetime=merchants.MAX_LIFETIME,
        max_tolerance=merchants.MAX_TOLERANCE_PERCENT,
        tolerance_step=merchants.TOLERANCE_STEP,
        **context,
    )


@bp.route("/settings", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _page()
    typed = {name: request.form.get(name, "")[:100] for name in FIELDS}
    problems = Problems()  # every bad value at once, each beside its field
    problems.check("payment_lifetime", merchants.parse_lifetime, typed["payment_lifetime"])
    problems.check("underpayment_tolerance", merchants.parse_tolerance, typed["underpayment_tolerance"])
    if "rate_spread_pct" in request.form:
        problems.check("rate_spread_pct", terms.parse_spread, typed["rate_spread_pct"])
    if "rate_lock_minutes" in request.form:
        problems.check("rate_lock_minutes", terms.parse_lock, typed["rate_lock_minutes"])
    try:
        problems.raise_any()
        with transaction():
            merchants.set_merchant_settings(
                g.merchant,
                payment_lifetime=typed["payment_lifetime"],
                underpayment_tolerance=typed["underpayment_tolerance"],
            )
            terms.set_terms(
                g.merchant,
                spread=typed["rate_spread_pct"] if "rate_spread_pct" in request.form else None,
                lock=typed["rate_lock_minutes"] if "rate_lock_minutes" in request.form else None,
            )
    except (FormError, DomainError) as exc:
        return _page(400, typed=typed, **refusal(exc, FIELDS))
    return _page(notice="Settings saved.")


@bp.post("/settings/password")
@login_required
def change_password():
    form = request.form
    current, new = form.get("current_password", ""), form.get("new_password", "")
    problems = new_password_problems(new, form.get("confirm_password", ""), "new_password")
    with transaction() as s:
        wrong = step_up(s, current)
    if wrong == THROTTLED:
        return _page(429, password_error=step_up_wait())
    if wrong:
        problems.add("current_password", "the current password is wrong")
    try:
        problems.raise_any()
        with transaction() as s:
            merchants.change_password(s, g.account, current, new, actor=dashboard_actor())
    except (FormError, DomainError) as exc:
        shown = refusal(exc, PASSWORD_FIELDS)
        return _page(400, errors=shown["errors"], password_error=shown["error"])
    deps().logins.revoke_all(g.account.id, keep=session.get("sid"))
    return _page(notice="Password changed. Every other login was signed out.")


@bp.post("/settings/logins/<ref>/revoke")
@login_required
def revoke_login(ref: str):
    if len(ref) != 64:
        return _page(404, error="No such login.")
    deps().logins.revoke(g.account.id, ref)
    return redirect(url_for("dashboard.settings.index"), 303)


def _pending_secret() -> str:
    """The secret being enrolled in this login: derived on the server from SECRET_KEY, the
    login and a random nonce kept in the cookie, so the cookie (signed, not hidden) never
    holds the secret itself; a new nonce (after the secret is confirmed) makes a new one."""
    nonce = session.get("totp_nonce")
    if not isinstance(nonce, str):
        nonce = session["totp_nonce"] = secrets.token_urlsafe(16)
    return twofactor.enrolment_secret(deps().settings.web.secret_key, g.login.ref, nonce)


def _two_factor_page(status: int = 200, /, **context):
    account = g.account
    if account.totp_enabled_at is not None:
        return render(
            "two_factor.html", status, enabled=True, recovery_left=len(account.recovery_code_hashes or []), **context
        )
    secret = _pending_secret()
    uri = twofactor.provisioning_uri(secret, account.email)
    return render(
        "two_factor.html",
        status,
        enabled=False,
        secret=secret,
        qr=twofactor.qr_svg(uri),
        required=deps().settings.web.require_2fa,
        store_requires=g.merchant.require_2fa,
        **context,
    )


def _sign_out_others() -> None:
    """Any two-factor change signs every other login of the account out (DESIGN §10)."""
    deps().logins.revoke_all(g.account.id, keep=session.get("sid"))


@bp.get("/settings/2fa")
@login_required
def two_factor():
    return _two_factor_page()


@bp.post("/settings/2fa/enable")
@login_required
def enable_two_factor():
    """Turn two-factor sign-in on: the password again (a stolen session alone cannot put the
    thief's authenticator on the account), then a code of the new secret."""
    if g.account.totp_enabled_at is not None or not isinstance(session.get("totp_nonce"), str):
        return redirect(url_for("dashboard.settings.two_factor"), 303)
    secret = _pending_secret()
    with transaction() as s:
        wrong = step_up(s, request.form.get("password", ""))
        codes = (
            None
            if wrong
            else twofactor.enable(s, g.account, secret, request.form.get("code", "")[:20], actor=dashboard_actor())
        )
    if wrong == THROTTLED:
        return _two_factor_page(429, error=step_up_wait())
    if wrong:
        return _two_factor_page(400, error="That is not your password: turning two-factor on needs it again.")
    if codes is None:
        return _two_factor_page(400, error="That code does not match. Enter the current code from your app.")
    session.pop("totp_nonce", None)
    _sign_out_others()
    return render(
        "two_factor.html",
        enabled=True,
        recovery_codes=codes,
        recovery_left=len(codes),
        notice="Two-factor sign-in is on. Every other login was signed out.",
    )


@bp.post("/settings/2fa/disable")
@login_required
def disable_two_factor():
    form = request.form
    if deps().settings.web.require_2fa:
        return _two_factor_page(403, error="Two-factor sign-in is required on this server.")
    with transaction() as s:
        wrong = step_up(s, form.get("password", ""), form.get("code", ""))
        if wrong is None:
            twofactor.disable(s, g.account, actor=dashboard_actor())
    if wrong == THROTTLED:
        return _two_factor_page(429, error=step_up_wait())
    if wrong:
        return _two_factor_page(400, error="Wrong password or code.")
    _sign_out_others()
    return _two_factor_page(notice="Two-factor sign-in is off. Every other login was signed out.")
