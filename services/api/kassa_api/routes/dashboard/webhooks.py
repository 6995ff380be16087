"""Webhook endpoints: add one (its signing secret shown once), and on its page the delivery
log, redeliver, a test event, disable/enable, rotate the secret, delete.

Forms go through the API's CreateWebhook model and the webhook and delivery handlers.
"""

from __future__ import annotations

from flask import Blueprint, abort, redirect, request, url_for
from sqlalchemy.orm import Session

from kassa_common.errors import DomainError
from kassa_common.messaging.messages import WEBHOOK_EVENTS
from kassa_common.models import WebhookEndpoint
from kassa_common.owner import Owner, list_owned
from kassa_common.urls import without_password
from kassa_common.webhooks import deliveries, endpoints
from kassa_common.webhooks.endpoints import CreateWebhook
from kassa_api.actors import dashboard_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import (
    LIST_SIZE,
    NO_DELIVERY,
    NO_WEBHOOK,
    current_owner,
    get_webhook_or_404,
    login_required,
    not_found_as_404,
    render,
    unconfirmed,
)
from kassa_api.routes.dashboard.forms import FormError, form_text, refusal, validated

bp = Blueprint("webhooks", __name__)
NEW_FIELDS = ("url", "description", "events")


def new_webhook_form() -> dict:
    return {
        "url": form_text("url") or "",
        "description": form_text("description"),
        "events": request.form.getlist("events") or None,
    }


def _list_page(status: int = 200, /, **context):
    owner = current_owner()
    rows, _ = list_owned(db(), WebhookEndpoint, owner, 1, LIST_SIZE)
    return render("webhooks.html", status, rows=rows, all_events=WEBHOOK_EVENTS, **context)


def _page(ref: str, status: int = 200, /, **context):
    owner, hook = current_owner(), get_webhook_or_404(ref)
    log, total = deliveries.list_deliveries(db(), owner, ref, 1, LIST_SIZE)
    health = deliveries.endpoint_health(db(), hook.id)
    return render("webhook.html", status, hook=hook, deliveries=log, total=total, health=health, **context)


@bp.route("/webhooks", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _list_page()
    owner = current_owner()
    try:
        body = validated(CreateWebhook, new_webhook_form())
        with transaction() as s:
            secret = endpoints.create_webhook(
                s,
                owner,
                body.model_dump(exclude_unset=True),
                deps().settings.sender.webhook_allow_private_urls,
                actor=dashboard_actor(),
            ).secret
    except (FormError, DomainError) as exc:
        return _list_page(422, **refusal(exc, NEW_FIELDS))
    return _list_page(201, secret=secret)


@bp.get("/webhooks/<ref>")
@login_required
def detail(ref: str):
    return _page(ref)


# The buttons of a webhook's page: each runs in the request's transaction and returns the
# new signing secret to show once, or None.


def _toggle_active(s: Session, owner: Owner, ref: str) -> None:
    active = get_webhook_or_404(ref).active
    allow_private = deps().settings.sender.webhook_allow_private_urls
    endpoints.update_webhook(s, owner, ref, {"active": not active}, allow_private, actor=dashboard_actor())


def _send_test(s: Session, owner: Owner, ref: str) -> None:
    deliveries.send_test(s, owner, ref)


def _rotate_secret(s: Session, owner: Owner, ref: str) -> str:
    return endpoints.rotate_secret(s, owner, ref, actor=dashboard_actor()).secret


def _delete(s: Session, owner: Owner, ref: str) -> None:
    endpoints.delete_webhook(s, owner, ref, actor=dashboard_actor())


ACTIONS = {"active": _toggle_active, "test": _send_test, "rotate-secret": _rotate_secret, "delete": _delete}
CONFIRM = {  # the actions that ask first: question, what follows, the button
    "rotate-secret": (
        "Rotate the signing secret of {url}?",
        "Deliveries are signed with the new secret at once: your server must verify with it from now on.",
        "Rotate secret",
    ),
    "delete": (
        "Delete the endpoint {url}?",
        "It receives no more deliveries; its delivery log goes with it. This cannot be undone.",
        "Delete endpoint",
    ),
}


@bp.post("/webhooks/<ref>/<action>")
@login_required
def act(ref: str, action: str):
    """One of ACTIONS; a refused one (say, a test to a disabled endpoint) shows why on the page."""
    if action not in ACTIONS:
        abort(404)
    if action in CONFIRM:
        hook = get_webhook_or_404(ref)
        question, consequence, button = CONFIRM[action]
        asking = unconfirmed(
            question.format(url=without_password(hook.url)),
            consequence,
            button,
            url_for("dashboard.webhooks.detail", ref=ref),
        )
        if asking is not None:
            return asking
    try:
        with not_found_as_404(NO_WEBHOOK), transaction() as s:
            secret = ACTIONS[action](s, current_owner(), ref)
    except DomainError as exc:
        return _page(ref, 422, error=exc.message)
    if action == "delete":
        return redirect(url_for("dashboard.webhooks.index"), 303)
    return _page(ref, secret=secret) if secret else redirect(url_for("dashboard.webhooks.detail", ref=ref), 303)


@bp.post("/webhooks/<ref>/deliveries/<delivery_id>/redeliver")
@login_required
def redeliver(ref: str, delivery_id: str):
    owner = current_owner()
    try:
        with not_found_as_404(NO_DELIVERY), transaction() as s:
            deliveries.redeliver(s, owner, ref, delivery_id)
    except DomainError as exc:
        return _page(ref, 422, error=exc.message)
    return redirect(url_for("dashboard.webhooks.detail", ref=ref), 303)
