"""The stores the signed-in account can open, and the switch between them (DESIGN §14).

Every dashboard view acts on one store, the open one (``common.login_required``); the
session remembers it. ``POST /dashboard/stores/<id>/switch`` (with the CSRF token) opens
another the account is a member of; a store it cannot open is the 404 page, so the switch
never confirms that a store exists. Signing in opens the first store the account owns.
"""

from __future__ import annotations

import re
import uuid

from flask import Blueprint, abort, g, redirect, request, session, url_for

from kassa_api.routes.dashboard.common import login_required, render

bp = Blueprint("stores", __name__)
NO_STORE = "No such store."
_SECTION = re.compile(r"/dashboard(/[a-z0-9-]+)?/?")  # a section's page: it exists in every store


@bp.get("/stores")
@login_required
def index():
    return render("stores.html")


@bp.post("/stores/<ref>/switch")
@login_required
def switch(ref: str):
    """Open the store ``ref``, then go back to the section the switch was made from (an
    object's own page belonged to the other store: the overview instead)."""
    try:
        wanted = uuid.UUID(ref)
    except ValueError:
        abort(404, description=NO_STORE)
    if not any(s.id == wanted for s in g.stores):
        abort(404, description=NO_STORE)
    session["store"] = str(wanted)
    back = request.form.get("next") or ""
    return redirect(back if _SECTION.fullmatch(back) else url_for("dashboard.overview.index"), 303)
