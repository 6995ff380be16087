"""API keys: create one (its secret shown once) in either mode with chosen scopes, list, revoke.

The list spans both modes: each key carries its own, whichever the dashboard is switched to.
"""

from __future__ import annotations

from flask import Blueprint, abort, redirect, request, url_for

from kassa_common.accounts import keys
from kassa_common.errors import DomainError
from kassa_common.ids import parse_uuid
from kassa_common.models import ApiKey
from kassa_api.actors import dashboard_actor
from kassa_api.deps import db, transaction
from kassa_api.routes.dashboard.common import current_owner, login_required, not_found_as_404, render, unconfirmed
from kassa_api.routes.dashboard.forms import FormError, Problems, refusal

bp = Blueprint("keys", __name__)
FIELDS = ("name", "mode", "scopes")


def _page(status: int = 200, /, **context):
    listed = keys.api_keys(db(), current_owner().merchant_id)
    return render("keys.html", status, keys=listed, scopes=keys.SCOPES, **context)


@bp.route("/keys", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _page()
    form = request.form
    mode, scopes = form.get("mode", "test"), form.getlist("scopes")
    problems = Problems()  # every problem at once, each beside its field
    problems.check("mode", keys.check_mode, mode)
    problems.check("scopes", keys.check_scopes, scopes)
    try:
        problems.raise_any()
        with transaction() as s:
            new_key = keys.create_key(
                s,
                current_owner().merchant_id,
                mode,
                scopes,
                form.get("name", "").strip()[:100] or None,
                actor=dashboard_actor(),
            ).key
    except (FormError, DomainError) as exc:
        return _page(422, **refusal(exc, FIELDS))
    return _page(new_key=new_key)


@bp.post("/keys/<key_id>/revoke")
@login_required
def revoke(key_id: str):
    key = parse_uuid(key_id)
    if key is None:
        abort(404)
    row = db().get(ApiKey, key)
    if row is None or row.merchant_id != current_owner().merchant_id:
        abort(404)
    asking = unconfirmed(
        f"Revoke the key {row.name or 'unnamed'} ({row.prefix})?",
        "Requests made with it are refused at once. This cannot be undone.",
        "Revoke key",
        url_for("dashboard.keys.index"),
    )
    if asking is not None:
        return asking
    with not_found_as_404(), transaction() as s:
        keys.revoke_key(s, current_owner().merchant_id, key, actor=dashboard_actor())
    return redirect(url_for("dashboard.keys.index"), 303)
