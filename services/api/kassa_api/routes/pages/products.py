"""A product's page (/products/<id>): the product, the pairs it can be paid with, and the
purchase that starts a payment and sends the customer to its checkout.

A live shop that cannot take a payment (no wallet for the chain) tells the shopper so in
plain words with a 503, never the operator's error; the log keeps the reason for the operator."""

from __future__ import annotations

import logging

from flask import redirect, request

from kassa_common import payments
from kassa_common.accounts import merchants
from kassa_common.emails import is_valid_email
from kassa_common.errors import DomainError, RateNotAvailable, WalletNotConfigured
from kassa_common.ids import parse_uuid
from kassa_common.models import Merchant, Product
from kassa_api.checkout import default_pair, networks_for
from kassa_api.deps import db, deps, make_owner, transaction
from kassa_api.routes.pages.common import bp
from kassa_api.web import error_page, page

log = logging.getLogger(__name__)


def cannot_pay(merchant: Merchant, tried: bool = False) -> str:
    """The shopper's words when the shop cannot take a payment now (nothing they can fix);
    ``tried``: they pressed Pay, and learn that nothing was charged."""
    name = merchant.business_name
    charged = " Nothing was charged." if tried else ""
    return (
        f"{name or 'This shop'} cannot take payments right now.{charged} "
        f"Please contact {name or 'the shop'} to pay, or try again later."
    )


def _payable(product: Product, merchant: Merchant, pairs: list) -> list:
    """The pairs a payment can be made with now: in live mode only on the chains the merchant
    has a wallet for (test payments derive from the published test keys)."""
    if product.test_mode:
        return pairs
    chains = set(merchants.wallets(db(), merchant.id, "live"))
    return [(n, t) for n, t in pairs if n.kind in chains]


def _product_or_error(product_id: str):
    pid = parse_uuid(product_id)
    product = db().get(Product, pid) if pid else None
    if product is None:
        return None, None, error_page(404, "There is no product at this address.")
    merchant = db().get(Merchant, product.merchant_id)
    if product.deleted_at is not None or not product.active or merchant is None or merchant.banned:
        return None, None, error_page(410, "This product is no longer available.")
    return product, merchant, None


def _product_page(product: Product, merchant: Merchant, status: int = 200, error: str | None = None):
    s = deps().settings
    pairs = [(n, t) for n in networks_for(s.networks, product.test_mode, s.development) for t in n.tokens]
    pairs = _payable(product, merchant, pairs)
    if product.currency_type == "CRYPTO":
        payable = any(n.name == product.network for n, _ in pairs)
    else:
        payable = bool(pairs)
    if not payable:
        status, error = 503, error or cannot_pay(merchant)
    return page(
        "pages/product.html",
        status,
        form_targets=(s.checkout_url,),
        product=product,
        business_name=merchant.business_name,
        pairs=pairs,
        payable=payable,
        error=error,
        price_text=format(product.price.normalize(), "f"),
        chosen=request.form.get("pair") or default_pair(pairs),
        email=request.form.get("email", ""),
    )


@bp.get("/products/<product_id>")
def product(product_id: str):
    product, merchant, unavailable = _product_or_error(product_id)
    return unavailable or _product_page(product, merchant)


@bp.post("/products/<product_id>")
def buy(product_id: str):
    product, merchant, unavailable = _product_or_error(product_id)
    if unavailable:
        return unavailable
    verdict = deps().public_limiter.hit(f"buy:{request.remote_addr}")
    if not verdict.allowed:  # one address starting payment after payment: a script, not a customer
        response = error_page(
            429, f"Too many payments were started from your address. Try again in {verdict.reset_in} seconds."
        )
        response.headers["Retry-After"] = str(verdict.reset_in)
        return response
    if product.currency_type == "CRYPTO":
        network, token = product.network, product.token
    else:
        network, _, token = request.form.get("pair", "").partition(":")
    email = request.form.get("email", "").strip() or None
    if email and not is_valid_email(email):  # one address: the receipt must not go to a list
        return _product_page(product, merchant, 422, "Enter one valid email address, or leave it empty.")
    s = deps().settings
    owner = make_owner(merchant.id, product.test_mode, merchant.payment_lifetime_minutes)
    cmd = payments.NewPayment(token=token, network=network, product_id=str(product.id), customer_email=email)
    try:
        with transaction() as session:
            created = payments.create_payment(
                session,
                owner,
                cmd,
                registry=s.networks,
                rates=deps().rates,
                checkout_base=s.checkout_url,
                allow_test_keys=s.development,
            )
    except RateNotAvailable as exc:  # no trustworthy rate: say so, never price on a guess
        response = _product_page(product, merchant, 503, exc.message)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    except WalletNotConfigured as exc:  # the merchant's to fix: the shopper reads plain words
        log.warning("product %s: live payment refused: %s", product.id, exc.message)
        return _product_page(product, merchant, 503, cannot_pay(merchant, tried=True))
    except DomainError as exc:
        return _product_page(product, merchant, 422, exc.message)
    return redirect(created.payment["checkout_url"], 303)
