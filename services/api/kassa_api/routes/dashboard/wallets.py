"""Wallets: where each payment's funds go, per chain and mode.

Kassa never holds a private key. A chain's wallet is an extended public key (each payment
gets its next address; the page shows the first one, so the merchant can check it
against their wallet) or, for EVM, a settlement address: each payment then gets a
forwarder deposit address that can only ever forward to it (DESIGN.md section 5).

A Bitcoin key also gets its watch-only output descriptors (to import the key into Bitcoin
Core or Sparrow without any private key) and the gap monitor: the longest run of addresses
no payment was made to, and the gap limit the merchant's wallet needs to see every payment
after it (``payments.gap``). Abandoned checkouts make such runs; a wallet left at its default
gap limit of 20 then shows less than the merchant was paid.
"""

from __future__ import annotations

import uuid

from flask import Blueprint, g, redirect, request, url_for

from kassa_common.accounts import merchants, wallet_changes
from kassa_common.chains.forwarder import factory_address
from kassa_common.errors import DomainError
from kassa_common.payments.addresses import first_address, first_index
from kassa_common.payments.gap import bitcoin_watch_only
from kassa_api.actors import dashboard_actor, link_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import (
    THROTTLED,
    WRONG_CODE,
    WRONG_PASSWORD,
    current_owner,
    login_required,
    render,
    step_up,
    step_up_wait,
)
from kassa_api.routes.dashboard.forms import FormError, Problems, refusal

bp = Blueprint("wallets", __name__)


def _page(status: int = 200, /, **context):
    owner = current_owner()
    wallets = merchants.wallets(db(), owner.merchant_id, owner.mode)
    pending = wallet_changes.pending(db(), owner.merchant_id, owner.mode)
    chains = []
    for chain in merchants.CHAINS:
        wallet = wallets.get(chain)
        xpub = wallet.xpub if wallet else None
        watch = (
            bitcoin_watch_only(db(), owner.merchant_id, owner.mode, deps().settings.networks)
            if chain == "bitcoin" and xpub
            else None
        )
        chains.append(
            {
                "chain": chain,
                "xpub": xpub,
                "settlement_address": wallet.settlement_address if wallet else None,
                "first_address": first_address(chain, xpub, owner.test_mode) if xpub else None,
                "first_index": first_index(owner.test_mode),
                "watch": watch,
                "pending": pending.get(chain),
            }
        )
    return render("wallets.html", status, chains=chains, factory=factory_address(), **context)


PASSWORD_NOT_IT = "changing where live payments go needs your password again: that is not it"
CODE_NOT_IT = "that code does not match: enter the current code from your app"
FIELDS = ("xpub", "settlement_address", "password", "code")


def _confirm(problems: Problems, password: str, code: str) -> bool:
    """The merchant's password (and, with two-factor sign-in on, a current code), asked again
    before a live wallet changes: a stolen session alone cannot redirect the money. False
    when the step-up checks are throttled (nothing was checked)."""
    with transaction() as s:
        wrong = step_up(s, password, code if g.account.totp_enabled_at is not None else None)
    if wrong == THROTTLED:
        return False
    if wrong == WRONG_PASSWORD:
        problems.add("password", PASSWORD_NOT_IT)  # the code is not tried (nor used up) without it
    elif wrong == WRONG_CODE:
        problems.add("code", CODE_NOT_IT)
    return True


@bp.route("/wallets", methods=["GET", "POST"])
@login_required
def index():
    """Read the form, check every field at once, and hand the change to
    ``wallet_changes.request_change``, which decides whether it is held (DESIGN §10)."""
    if request.method != "POST":  # GET or HEAD
        return _page()
    owner, form = current_owner(), request.form
    chain = form.get("chain", "")
    settings = deps().settings
    settlement = form["settlement_address"] if "settlement_address" in form and chain == "evm" else None
    xpub = None if settlement is not None else form.get("xpub", "")
    problems = Problems()  # the key or address, the password and the code: every problem at once
    if settlement is not None:
        problems.check("settlement_address", merchants.check_settlement_address, owner.mode, settlement)
    else:
        problems.check("xpub", merchants.check_wallet, owner.mode, chain, xpub, allow_test_keys=settings.development)
    if wallet_changes.asks_password(owner.mode) and not _confirm(
        problems, form.get("password", ""), form.get("code", "")
    ):
        return _page(429, error=step_up_wait())
    try:
        problems.raise_any()
    except FormError as exc:
        unconfirmed = "password" in exc.errors or "code" in exc.errors
        return _page(403 if unconfirmed else 422, **refusal(exc, FIELDS))
    try:
        with transaction() as s:
            done = wallet_changes.request_change(
                s,
                g.merchant,
                owner.mode,
                chain,
                xpub=xpub,
                settlement_address=settlement,
                configured_hours=settings.web.wallet_change_hold_hours,
                development=settings.development,
                dashboard_url=settings.dashboard_url,
                actor=dashboard_actor(),
            )
    except DomainError as exc:
        return _page(422, **refusal(exc, FIELDS))
    if done.held:
        return _page(held=chain, warning=done.warning)
    return _page(saved=chain, warning=done.warning)


@bp.route("/wallets/pending/<change_id>/cancel", methods=["POST"])
@login_required
def cancel_pending(change_id: str):
    """The wallets page's cancel button (the merchant's own pending change)."""
    try:
        parsed = uuid.UUID(change_id)
    except ValueError:
        return _page(404, error="No such pending change.")
    with transaction() as s:
        wallet_changes.cancel_own(s, g.merchant.id, parsed, actor=dashboard_actor())
    return redirect(url_for("dashboard.wallets.index"), 303)


@bp.route("/wallets/cancel/<token>", methods=["GET", "POST"])
def cancel_by_link(token: str):
    """The emailed link: a page naming the pending change, whose button cancels it without a
    login (whoever holds the link can only stop a change, never make one). Opening it
    cancels nothing, so a mail scanner that fetches links does no harm; the button is a
    POST with the page's CSRF token, so another site cannot post it either."""
    with transaction() as s:
        if request.method == "POST":
            change = wallet_changes.cancel_by_token(s, token, actor=link_actor("the emailed cancel link"))
        else:  # GET or HEAD
            change = wallet_changes.pending_by_token(s, token)
        shown = {"mode": change.mode, "chain": change.chain, "applies_at": change.applies_at} if change else None
    action = url_for("dashboard.wallets.cancel_by_link", token=token)
    return render(
        "wallet_cancel.html", 200 if shown else 404, change=shown, canceled=request.method == "POST", action=action
    )
