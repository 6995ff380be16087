"""Products: priced items with a public share link. Their commands (create, update), their
API shape (the request models and ``product_to_dict``) in one place; the web only routes."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.chains.networks import Registry
from kassa_common.errors import DomainError
from kassa_common.fields import CurrencyCode, Name, NetworkCode, Price, Strict, TokenCode
from kassa_common.models import Product
from kassa_common.owner import Owner, owned, soft_delete
from kassa_common.payments import resolve_pair
from kassa_common.pricing import currencies
from kassa_common.pricing.amounts import plain
from kassa_common.timefmt import iso, utcnow


class InvalidProduct(DomainError):
    code = "VALIDATION_ERROR"


def _check(fields: dict[str, Any], registry: Registry, test_mode: bool) -> None:
    """Rules that span fields: FIAT is priced in its currency's minor units; CRYPTO in units of its token."""
    price: Decimal = fields["price"]
    if fields["currency_type"] == "FIAT":
        if fields.get("token") or fields.get("network"):
            raise InvalidProduct(
                "FIAT products take no token or network: the customer chooses at checkout",
                [{"field": "token", "message": "not allowed for FIAT"}],
            )
        currency = fields["currency"] = fields.get("currency") or currencies.DEFAULT
        if not currencies.fits(price, currency):
            places = currencies.minor_units(currency)
            raise InvalidProduct(
                f"a FIAT price in {currency} has at most {places} decimal places",
                [{"field": "price", "message": f"at most {places} decimals in {currency}"}],
            )
        return
    if fields.get("currency") not in (None, currencies.DEFAULT) and fields.get("currency_type") == "CRYPTO":
        raise InvalidProduct(
            "CRYPTO products are priced in their token, not a currency",
            [{"field": "currency", "message": "not allowed for CRYPTO"}],
        )
    fields["currency"] = currencies.DEFAULT
    missing = [f for f in ("token", "network") if not fields.get(f)]
    if missing:
        raise InvalidProduct(
            "CRYPTO products need token and network", [{"field": f, "message": "required for CRYPTO"} for f in missing]
        )
    _, token = resolve_pair(registry, fields["network"], fields["token"], test_mode)
    fields["token"], fields["network"] = token.symbol, fields["network"].upper()
    if price != price.quantize(Decimal(1).scaleb(-token.decimals)):
        raise InvalidProduct(
            f"{token.symbol} has {token.decimals} decimals", [{"field": "price", "message": "too precise"}]
        )


def create_product(
    session: Session, owner: Owner, fields: dict[str, Any], registry: Registry, *, actor: audit.Actor = audit.OPERATOR
) -> Product:
    """A new product of the owner's mode (audited as ``actor``'s: the API and the dashboard
    pass theirs; the tests' set-up is the operator's)."""
    fields = {k: v for k, v in fields.items() if v is not None}
    fields.setdefault("currency_type", "FIAT")
    _check(fields, registry, owner.test_mode)
    now = utcnow()
    product = Product(
        id=uuid.uuid4(),
        merchant_id=owner.merchant_id,
        test_mode=owner.test_mode,
        created_at=now,
        updated_at=now,
        active=fields.pop("active", True),
        **fields,
    )
    session.add(product)
    session.flush()
    audit.record(session, owner.merchant_id, actor, "product.created", "product", product.id, _said(owner, product))
    return product


def _said(owner: Owner, product: Product) -> str:
    return f"{owner.mode}: {product.name}, {product.price} {product.currency or product.token or ''}".strip()


def delete_product(session: Session, owner: Owner, ref: str, *, actor: audit.Actor) -> None:
    """Hide the product from get and list (payments made for it keep their link)."""
    soft_delete(session, Product, ref, owner, what="product")
    audit.record(session, owner.merchant_id, actor, "product.deleted", "product", ref, owner.mode)


def update_product(
    session: Session, owner: Owner, ref: str, changes: dict[str, Any], registry: Registry, *, actor: audit.Actor
) -> Product:
    product = owned(session, Product, ref, owner, what="product", lock=True)
    merged = {
        f: getattr(product, f)
        for f in ("name", "description", "price", "currency_type", "currency", "token", "network")
    }
    merged.update(changes)
    cleared = [f for f in ("name", "price", "currency_type", "active") if f in changes and changes[f] is None]
    if cleared:
        raise InvalidProduct(
            "these fields cannot be null", [{"field": f, "message": "cannot be null"} for f in cleared]
        )
    if changes.get("currency_type") == "FIAT" and "token" not in changes and "network" not in changes:
        merged["token"] = merged["network"] = None
    if changes.get("currency_type") == "CRYPTO" and "currency" not in changes:
        merged["currency"] = None
    _check(merged, registry, owner.test_mode)
    for field, value in merged.items():
        setattr(product, field, value)
    if "active" in changes:
        product.active = changes["active"]
    product.updated_at = utcnow()
    detail = f"{owner.mode}: {', '.join(sorted(changes)) or 'nothing'} changed"
    audit.record(session, owner.merchant_id, actor, "product.updated", "product", product.id, detail)
    return product


# ---- API shape -------------------------------------------------------------------------


class ProductFields(Strict):
    name: Name | None = None
    description: Annotated[str, StringConstraints(max_length=2000)] | None = None
    price: Price | None = None
    currency_type: Literal["FIAT", "CRYPTO"] | None = None
    currency: CurrencyCode | None = Field(None, description="ISO 4217 code of a FIAT price, USD by default")
    token: TokenCode | None = None
    network: NetworkCode | None = None
    active: StrictBool | None = None


class CreateProduct(ProductFields):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "Blue mug", "description": "Stoneware, 350 ml", "price": 19.99}]}
    )
    name: Name
    price: Price
    currency_type: Literal["FIAT", "CRYPTO"] = "FIAT"


class UpdateProduct(ProductFields):
    model_config = ConfigDict(json_schema_extra={"examples": [{"price": 17.5, "active": True}]})
    # Fields every product has: absent leaves them as they are; null is not a value (400).
    name: Name = None  # type: ignore[assignment]
    price: Price = None  # type: ignore[assignment]
    currency_type: Literal["FIAT", "CRYPTO"] = None  # type: ignore[assignment]
    active: StrictBool = None  # type: ignore[assignment]


class ProductOut(BaseModel):
    id: str
    name: str
    description: str | None
    price: float | str
    currency_type: Literal["FIAT", "CRYPTO"]
    currency: str | None = Field(description="ISO 4217 code of a FIAT price; null for CRYPTO")
    token: str | None
    network: str | None
    active: bool
    share_link: str
    test_mode: bool
    created_at: str
    updated_at: str


def product_to_dict(p: Product, share_link: str) -> dict[str, Any]:
    return {
        "id": str(p.id),
        "name": p.name,
        "description": p.description,
        "price": float(p.price) if p.currency_type == "FIAT" else plain(p.price),
        "currency_type": p.currency_type,
        "currency": p.currency if p.currency_type == "FIAT" else None,
        "token": p.token,
        "network": p.network,
        "active": p.active,
        "share_link": share_link,
        "test_mode": p.test_mode,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
    }
