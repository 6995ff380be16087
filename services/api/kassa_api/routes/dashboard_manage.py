"""Dashboard pages that manage things: products, webhook endpoints (with their delivery
log, redeliver and test), and wallets. Forms are validated by the same pydantic models
and carried out by the same handlers as the API."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

import sqlalchemy as sa
from flask import g, redirect, request, url_for
from pydantic import BaseModel, ValidationError

from kassa_api.deps import db, deps, transaction
from kassa_api.handlers import deliveries as dh
from kassa_api.handlers import products as ph
from kassa_api.handlers import webhooks as wh
from kassa_api.handlers.common import list_owned, owned, soft_delete
from kassa_api.routes.dashboard import bp, login_required, render
from kassa_api.schemas import CreateProduct, CreateWebhook, UpdateProduct
from kassa_api.web import error_page
from kassa_common import accounts
from kassa_common.chains.hd import derive_address
from kassa_common.errors import DomainError
from kassa_common.messages import PAYMENT_EVENTS
from kassa_common.models import Product, Wallet, WebhookEndpoint

LIST_SIZE = 50


class FormError(Exception):
    pass


def validated(model: type[BaseModel], data: dict) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormError("; ".join(f"{'.'.join(map(str, e['loc'])) or 'form'}: {e['msg']}" for e in exc.errors())) from None


def form_decimal(name: str) -> Decimal | str:
    raw = request.form.get(name, "").strip()
    try:
        return Decimal(raw)
    except InvalidOperation:
        return raw  # the model reports it as not a number


def form_text(name: str) -> str | None:
    return request.form.get(name, "").strip() or None


def share_link(product: Product) -> str:
    return f"{deps().settings.checkout_url}/products/{product.id}"


# ---- products ---------------------------------------------------------------------------

def product_form() -> dict:
    fields = {"name": form_text("name") or "", "description": form_text("description"),
              "price": form_decimal("price"), "currency_type": request.form.get("currency_type", "FIAT")}
    if fields["currency_type"] == "CRYPTO":
        fields.update(token=form_text("token"), network=form_text("network"))
    return fields


@bp.route("/products", methods=["GET", "POST"])
@login_required
def products():
    error, status = None, 200
    if request.method == "POST":
        try:
            body = validated(CreateProduct, product_form())
            with transaction() as s:
                ph.create_product(s, g.merchant.id, g.test_mode, body.model_dump(), deps().settings.networks)
            return redirect(url_for("dashboard.products"), 303)
        except (FormError, DomainError) as exc:
            error, status = getattr(exc, "message", str(exc)), 422
    rows, _ = list_owned(db(), Product, g.merchant.id, g.test_mode, 1, LIST_SIZE)
    return render("products.html", status, rows=rows, link=share_link, error=error, networks=deps().settings.networks)


@bp.route("/products/<ref>", methods=["GET", "POST"])
@login_required
def product_edit(ref: str):
    try:
        product = owned(db(), Product, ref, g.merchant.id, g.test_mode, what="product")
    except DomainError:
        return error_page(404, "No such product in this mode.")
    error, status = None, 200
    if request.method == "POST":
        changes = {"name": form_text("name") or "", "description": form_text("description"),
                   "price": form_decimal("price"), "active": request.form.get("active") == "on"}
        try:
            body = validated(UpdateProduct, changes)
            with transaction() as s:
                ph.update_product(s, g.merchant.id, g.test_mode, ref, body.model_dump(exclude_unset=True),
                                  deps().settings.networks)
            return redirect(url_for("dashboard.products"), 303)
        except (FormError, DomainError) as exc:
            error, status = getattr(exc, "message", str(exc)), 422
    return render("product.html", status, product=product, link=share_link(product), error=error)


@bp.post("/products/<ref>/delete")
@login_required
def product_delete(ref: str):
    try:
        with transaction() as s:
            soft_delete(s, Product, ref, g.merchant.id, g.test_mode, what="product")
    except DomainError:
        return error_page(404, "No such product in this mode.")
    return redirect(url_for("dashboard.products"), 303)


# ---- webhooks ---------------------------------------------------------------------------

@bp.route("/webhooks", methods=["GET", "POST"])
@login_required
def webhooks():
    error, status, secret = None, 200, None
    if request.method == "POST":
        data = {"url": form_text("url") or "", "description": form_text("description"),
                "events": request.form.getlist("events") or None}
        try:
            body = validated(CreateWebhook, data)
            with transaction() as s:
                secret = wh.create_webhook(s, g.merchant.id, g.test_mode, body.model_dump(exclude_unset=True),
                                           deps().settings.webhook_allow_private_urls).secret
            status = 201
        except (FormError, DomainError) as exc:
            error, status = getattr(exc, "message", str(exc)), 422
    rows, _ = list_owned(db(), WebhookEndpoint, g.merchant.id, g.test_mode, 1, LIST_SIZE)
    return render("webhooks.html", status, rows=rows, secret=secret, error=error, all_events=PAYMENT_EVENTS)


def _webhook_page(ref: str, status: int = 200, **context):
    hook = owned(db(), WebhookEndpoint, ref, g.merchant.id, g.test_mode, what="webhook")
    log, total = dh.list_deliveries(db(), g.merchant.id, g.test_mode, ref, 1, LIST_SIZE)
    return render("webhook.html", status, hook=hook, deliveries=log, total=total, **context)


@bp.get("/webhooks/<ref>")
@login_required
def webhook_detail(ref: str):
    try:
        return _webhook_page(ref)
    except DomainError:
        return error_page(404, "No such webhook in this mode.")


@bp.post("/webhooks/<ref>/<action>")
@login_required
def webhook_action(ref: str, action: str):
    """active (toggle), test, rotate-secret, delete."""
    secret = None
    try:
        with transaction() as s:
            if action == "active":
                hook = owned(s, WebhookEndpoint, ref, g.merchant.id, g.test_mode, what="webhook")
                wh.update_webhook(s, g.merchant.id, g.test_mode, ref, {"active": not hook.active},
                                  deps().settings.webhook_allow_private_urls)
            elif action == "test":
                dh.send_test(s, g.merchant.id, g.test_mode, ref)
            elif action == "rotate-secret":
                secret = wh.rotate_secret(s, g.merchant.id, g.test_mode, ref).secret
            elif action == "delete":
                soft_delete(s, WebhookEndpoint, ref, g.merchant.id, g.test_mode, what="webhook")
                return redirect(url_for("dashboard.webhooks"), 303)
            else:
                return error_page(404)
    except DomainError as exc:
        if exc.code == "NOT_FOUND":
            return error_page(404, "No such webhook in this mode.")
        return _webhook_page(ref, 422, error=exc.message)
    if secret:
        return _webhook_page(ref, secret=secret)
    return redirect(url_for("dashboard.webhook_detail", ref=ref), 303)


@bp.post("/webhooks/<ref>/deliveries/<delivery_id>/redeliver")
@login_required
def webhook_redeliver(ref: str, delivery_id: str):
    try:
        with transaction() as s:
            dh.redeliver(s, g.merchant.id, g.test_mode, ref, delivery_id)
    except DomainError as exc:
        if exc.code == "NOT_FOUND":
            return error_page(404, "No such delivery.")
        return _webhook_page(ref, 422, error=exc.message)
    return redirect(url_for("dashboard.webhook_detail", ref=ref), 303)


# ---- wallets ----------------------------------------------------------------------------

def first_address(chain: str, xpub: str, test_mode: bool) -> str:
    hrp = None if chain == "evm" else ("tb" if test_mode else "bc")
    return derive_address(chain, xpub, 0, bech32_hrp=hrp)


@bp.route("/wallets", methods=["GET", "POST"])
@login_required
def wallets():
    error, status, saved = None, 200, None
    mode = "test" if g.test_mode else "live"
    if request.method == "POST":
        chain = request.form.get("chain", "")
        try:
            with transaction() as s:
                accounts.set_wallet(s, g.merchant.id, mode, chain, request.form.get("xpub", ""))
            saved = chain
        except DomainError as exc:
            error, status = exc.message, 422
    current = {w.chain: w.xpub for w in db().scalars(
        sa.select(Wallet).where(Wallet.merchant_id == g.merchant.id, Wallet.mode == mode))}
    chains = [{"chain": c, "xpub": current.get(c),
               "first_address": first_address(c, current[c], g.test_mode) if c in current else None}
              for c in accounts.CHAINS]
    return render("wallets.html", status, chains=chains, saved=saved, error=error)
