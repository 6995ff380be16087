"""Email notifications: the merchant's switch for the emails about its payments.

On (the default), the notifier emails the account address when a payment completes, is
partially paid or receives funds late; off, it sends the merchant nothing. Customers'
receipts do not depend on it: a payment with a ``customer_email`` gets one on completion.
Like the settings, the switch belongs to the merchant, not to a mode.
"""

from __future__ import annotations

from flask import Blueprint, g, request

from kassa_api.deps import transaction
from kassa_api.routes.dashboard.common import login_required, render

bp = Blueprint("notifications", __name__)


@bp.route("/notifications", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return render("notifications.html")
    on = request.form.get("notify_email") == "on"
    with transaction():
        g.merchant.notify_email = on
    return render("notifications.html", notice=f"Email notifications are {'on' if on else 'off'}.")
