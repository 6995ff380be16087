"""/products: priced items with a public share link."""

from __future__ import annotations

from flask import Blueprint

from kassa_common import products, urls
from kassa_common.fields import Deleted, ListPage
from kassa_common.models import Product
from kassa_common.owner import list_owned, owned
from kassa_common.paging import page_meta
from kassa_common.products import CreateProduct, ProductOut, UpdateProduct, product_to_dict
from kassa_api.actors import api_actor
from kassa_api.auth import owner
from kassa_api.deps import db, deps, transaction
from kassa_api.endpoint import endpoint

bp = Blueprint("products", __name__)
SCOPE = "products:manage"


def out(product: Product) -> dict:
    return product_to_dict(product, urls.share_link(deps().settings, product.id))


@bp.post("/products")
@endpoint(
    "Create a product", scope=SCOPE, tag="products", body=CreateProduct, response=ProductOut, status=201, errors=(422,)
)
def create_product(body: CreateProduct):
    with transaction() as session:
        product = products.create_product(
            session, owner(), body.model_dump(), deps().settings.networks, actor=api_actor()
        )
    return out(product), 201


@bp.get("/products")
@endpoint(
    "List products, newest first",
    scope=SCOPE,
    tag="products",
    query=ListPage,
    response=list[ProductOut],
    envelope_kind="list",
)
def list_products(query: ListPage):
    rows, total = list_owned(db(), Product, owner(), query.page, query.pageSize)
    return {"data": [out(r) for r in rows], "meta": page_meta(query.page, query.pageSize, total)}


@bp.get("/products/<ref>")
@endpoint("Get a product", scope=SCOPE, tag="products", response=ProductOut, errors=(404,))
def get_product(ref: str):
    return out(owned(db(), Product, ref, owner(), what="product"))


@bp.patch("/products/<ref>")
@endpoint(
    "Update a product (only the fields sent)",
    scope=SCOPE,
    tag="products",
    body=UpdateProduct,
    response=ProductOut,
    errors=(404, 422),
)
def update_product(ref: str, body: UpdateProduct):
    with transaction() as session:
        product = products.update_product(
            session, owner(), ref, body.model_dump(exclude_unset=True), deps().settings.networks, actor=api_actor()
        )
    return out(product)


@bp.delete("/products/<ref>")
@endpoint("Delete a product", scope=SCOPE, tag="products", response=Deleted, envelope_kind="bare", errors=(404,))
def delete_product(ref: str):
    with transaction() as session:
        products.delete_product(session, owner(), ref, actor=api_actor())
    return {"deleted": True}
