"""Products: create (priced in USD or in a token), list with share links, edit, deactivate, delete.

Forms go through the API's CreateProduct/UpdateProduct models and product handlers.
"""

from __future__ import annotations

from flask import Blueprint, redirect, request, url_for

from kassa_common import products, urls
from kassa_common.errors import DomainError
from kassa_common.models import Product
from kassa_common.owner import list_owned
from kassa_common.products import CreateProduct, UpdateProduct
from kassa_api.actors import dashboard_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import (
    LIST_SIZE,
    NO_PRODUCT,
    current_owner,
    get_product_or_404,
    login_required,
    not_found_as_404,
    render,
    unconfirmed,
)
from kassa_api.routes.dashboard.forms import FormError, form_decimal, form_text, refusal, validated

bp = Blueprint("products", __name__)
NEW_FIELDS = ("name", "description", "price", "currency_type", "currency", "token", "network")
EDIT_FIELDS = ("name", "description", "price", "active")


def share_link(product: Product) -> str:
    return urls.share_link(deps().settings, product.id)


def new_product_form() -> dict:
    fields = {
        "name": form_text("name") or "",
        "description": form_text("description"),
        "price": form_decimal("price"),
        "currency_type": request.form.get("currency_type", "FIAT"),
    }
    if fields["currency_type"] == "FIAT" and form_text("currency"):
        fields["currency"] = form_text("currency")
    if fields["currency_type"] == "CRYPTO":
        fields.update(token=form_text("token"), network=form_text("network"))
    return fields


def product_changes_form() -> dict:
    """An unchecked box sends nothing: a missing ``active`` means inactive."""
    return {
        "name": form_text("name") or "",
        "description": form_text("description"),
        "price": form_decimal("price"),
        "active": request.form.get("active") == "on",
    }


def _list_page(status: int = 200, /, **context):
    owner = current_owner()
    rows, _ = list_owned(db(), Product, owner, 1, LIST_SIZE)
    return render("products.html", status, rows=rows, link=share_link, networks=deps().settings.networks, **context)


@bp.route("/products", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _list_page()
    owner = current_owner()
    try:
        body = validated(CreateProduct, new_product_form())
        with transaction() as s:
            products.create_product(s, owner, body.model_dump(), deps().settings.networks, actor=dashboard_actor())
    except (FormError, DomainError) as exc:
        return _list_page(422, **refusal(exc, NEW_FIELDS))
    return redirect(url_for("dashboard.products.index"), 303)


@bp.route("/products/<ref>", methods=["GET", "POST"])
@login_required
def edit(ref: str):
    product, owner = get_product_or_404(ref), current_owner()
    if request.method != "POST":  # GET or HEAD
        return render("product.html", product=product, link=share_link(product))
    try:
        body = validated(UpdateProduct, product_changes_form())
        with transaction() as s:
            products.update_product(
                s, owner, ref, body.model_dump(exclude_unset=True), deps().settings.networks, actor=dashboard_actor()
            )
    except (FormError, DomainError) as exc:
        return render("product.html", 422, product=product, link=share_link(product), **refusal(exc, EDIT_FIELDS))
    return redirect(url_for("dashboard.products.index"), 303)


@bp.post("/products/<ref>/delete")
@login_required
def delete(ref: str):
    owner = current_owner()
    product = get_product_or_404(ref)
    asking = unconfirmed(
        f"Delete the product {product.name}?",
        "Its share link stops working; payments already made for it keep their record. This cannot be undone.",
        "Delete product",
        url_for("dashboard.products.edit", ref=ref),
    )
    if asking is not None:
        return asking
    with not_found_as_404(NO_PRODUCT), transaction() as s:
        products.delete_product(s, owner, ref, actor=dashboard_actor())
    return redirect(url_for("dashboard.products.index"), 303)
