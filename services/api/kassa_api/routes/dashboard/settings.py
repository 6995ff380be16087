"""Merchant settings: how long new payments stay open, how far short of the amount a
confirmed payment may fall and still complete, and the pricing terms (the rate spread and
how long a quoted rate holds: ``kassa_common.pricing.terms``).

They belong to the merchant, not to a mode, so the page looks the same switched to test
or live. The rules and the writing live in ``kassa_common.accounts``, which
``kassa merchant settings`` uses too; a refused value re-renders the form with the reason
(400) and writes nothing.
"""
from __future__ import annotations

from flask import Blueprint, g, request

from kassa_api.deps import deps, transaction
from kassa_api.routes.dashboard.common import login_required, render
from kassa_common import accounts
from kassa_common.errors import DomainError
from kassa_common.pricing import terms

bp = Blueprint("settings", __name__)
FIELDS = ("payment_lifetime", "underpayment_tolerance", "rate_spread_pct", "rate_lock_minutes")


def _page(status: int = 200, /, *, typed: dict[str, str] | None = None, **context):
    """The form with the settings in force, or with what was ``typed`` when it was refused."""
    default = deps().settings.payment_lifetime_minutes
    current = accounts.merchant_settings(g.merchant, default)
    pricing = terms.terms_of(g.merchant)
    values = typed or {"payment_lifetime": "" if current.lifetime_is_default else str(current.payment_lifetime_minutes),
                       "underpayment_tolerance": current.tolerance_percent, "rate_spread_pct": pricing.spread_text,
                       "rate_lock_minutes": str(pricing.lock_minutes or "")}
    return render("settings.html", status, current=current, values=values, default_lifetime=default,
                  pricing=pricing, max_spread=terms.MAX_SPREAD, max_lock=terms.MAX_LOCK,
                  min_lifetime=accounts.MIN_LIFETIME, max_lifetime=accounts.MAX_LIFETIME,
                  max_tolerance=accounts.MAX_TOLERANCE_PERCENT, tolerance_step=accounts.TOLERANCE_STEP, **context)


@bp.route("/settings", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _page()
    typed = {name: request.form.get(name, "")[:100] for name in FIELDS}
    try:
        with transaction():
            accounts.set_merchant_settings(g.merchant, payment_lifetime=typed["payment_lifetime"],
                                           underpayment_tolerance=typed["underpayment_tolerance"])
            terms.set_terms(g.merchant, spread=typed["rate_spread_pct"] if "rate_spread_pct" in request.form else None,
                            lock=typed["rate_lock_minutes"] if "rate_lock_minutes" in request.form else None)
    except DomainError as exc:
        return _page(400, typed=typed, error=exc.message)
    return _page(notice="Settings saved.")
