"""The page of an emailed invitation to a store (DESIGN §14): it names the store, the role and
the invited email, and joining needs the invitee's consent: its form signs in with that
email's password (and a current code with two-factor sign-in on), or, for an email with no
account yet, signs up with a new password. Opening the link changes nothing (a mail scanner
fetching it does no harm). Wrong passwords count with the login's failures."""

from __future__ import annotations

from flask import Blueprint, redirect, request, session, url_for

from kassa_common.accounts import invitations, merchants, stores, twofactor
from kassa_common.errors import DomainError
from kassa_common.models import Account, Merchant
from kassa_api.actors import account_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.ratelimit import wait_text
from kassa_api.routes.dashboard.accounts import new_password_problems, start_login
from kassa_api.routes.dashboard.common import render
from kassa_api.routes.dashboard.forms import FormError, refusal

bp = Blueprint("invitations", __name__)
FIELDS = ("password", "confirm_password", "code")


def _page(invitation, status: int = 200, /, **context):
    if invitation is None:
        return render("invitation.html", 404, invitation=None)
    store = db().get(Merchant, invitation.store_id)
    has_account = stores.find_account(db(), invitation.email)
    return render(
        "invitation.html",
        status,
        invitation=invitation,
        store_name=store.business_name if store else None,
        has_account=has_account is not None,
        needs_code=has_account is not None and has_account.totp_enabled_at is not None,
        **context,
    )


@bp.route("/invitations/<token>", methods=["GET", "POST"])
def accept(token: str):
    if request.method != "POST":  # GET or HEAD
        return _page(invitations.by_token(db(), token))
    failures, by_address = deps().login_failures, deps().login_failures_by_address
    address_key = f"login-address:{request.remote_addr}"
    try:
        with transaction() as s:
            invitation = invitations.by_token(s, token, lock=True)
            if invitation is None:
                return _page(None)
            key = f"login:{request.remote_addr}|{invitation.email.lower()}"
            if failures.exceeded(key) or by_address.exceeded(address_key):
                wait = wait_text(failures if failures.exceeded(key) else by_address)
                return _page(invitation, 429, error=f"Too many failed attempts. Try again in {wait}.")
            account = _signed_in_or_up(s, invitation.email, key, address_key)
            if account is None:
                return _page(invitation, 401, error="Wrong password or code.")
            invitations.accept(s, invitation, account, actor=account_actor(account))
            store_id = invitation.store_id
    except (FormError, DomainError) as exc:
        return _page(invitations.by_token(db(), token), 400, **refusal(exc, FIELDS))
    start_login(account)
    session["store"] = str(store_id)
    return redirect(url_for("dashboard.overview.index"), 303)


def _signed_in_or_up(s, email: str, key: str, address_key: str) -> Account | None:
    """The invited email's account, once its password (and code) are right, or a new one with
    the password chosen here; None (a failure counted) when they are wrong."""
    form = request.form
    password = form.get("password", "")[:1000]
    account = stores.find_account(s, email)
    if account is None:
        new_password_problems(password, form.get("confirm_password", "")[:1000]).raise_any()
        return stores.new_account(s, email, merchants.hash_password(password))
    right = merchants.check_password(account.password_hash, password) and (
        account.totp_enabled_at is None or twofactor.check_code(s, account, form.get("code", "")[:20])
    )
    if not right:
        deps().login_failures.hit(key)
        deps().login_failures_by_address.hit(address_key)
        return None
    deps().login_failures.clear(key)
    return account
