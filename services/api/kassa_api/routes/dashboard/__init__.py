"""The merchant dashboard: a parent blueprint at /dashboard with one child per resource.

The parent holds what every dashboard page shares: the CSRF check on each POST, the HTML
error page and the session cookie's flags. Each child module holds one resource's views
and takes its helpers from ``common``, never from a sibling.
"""

from __future__ import annotations

from flask import Blueprint
from werkzeug.exceptions import HTTPException

from kassa_api import csrf, query
from kassa_api.routes.dashboard import (
    accounts,
    audit,
    events,
    invitations,
    keys,
    members,
    notifications,
    overview,
    payments,
    products,
    refunds,
    settings,
    stores,
    sweeps,
    wallets,
    webhooks,
)
from kassa_api.web import http_error_page

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")
bp.before_request(query.guard)
csrf.protect(bp)
bp.register_error_handler(HTTPException, http_error_page)
for resource in (
    accounts,
    overview,
    keys,
    payments,
    refunds,
    products,
    webhooks,
    events,
    wallets,
    sweeps,
    settings,
    notifications,
    stores,
    members,
    audit,
    invitations,
):
    bp.register_blueprint(resource.bp)


@bp.record_once
def _cookie_settings(state) -> None:
    """The login session cookie: hidden from scripts, not sent on cross-site POSTs, https-only behind https."""
    https = state.app.extensions["kassa"].settings.checkout_url.startswith("https://")
    state.app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_SECURE=https)
