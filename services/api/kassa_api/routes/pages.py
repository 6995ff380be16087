"""Public pages: the hosted checkout (/pay/<short_id>), the product page (/products/<id>) and a
refund's claim page (/refunds/<claim token>)."""

from __future__ import annotations

from flask import Blueprint, jsonify, redirect, request, url_for
from werkzeug.exceptions import HTTPException

from kassa_common import payments
from kassa_common.emails import is_valid_email
from kassa_common.errors import DomainError, InvalidClaim, InvalidTransition, NotFound, RateNotAvailable
from kassa_common.ids import parse_uuid
from kassa_common.models import Merchant, Product, Refund
from kassa_common.pricing.amounts import units_text
from kassa_common.refunds.payouts import simulate_payout
from kassa_common.refunds.queries import find_by_claim_token
from kassa_common.refunds.shape import due_units
from kassa_common.refunds.transitions import claim_refund
from kassa_common.statuses import PaymentStatus, RefundStatus
from kassa_common.timefmt import utcnow
from kassa_api import csrf, query
from kassa_api.checkout import (
    arrivals,
    back_url,
    default_pair,
    networks_for,
    payment_uri,
    qr_svg,
    short_hash,
    status_words,
    time_left,
    why_not_canceled,
)
from kassa_api.deps import db, deps, make_owner, transaction
from kassa_api.web import error_page, http_error_page, page, secure

bp = Blueprint("pages", __name__)
bp.before_request(query.guard)
csrf.protect(bp)
TEST_ACTIONS = ("pay", "pay-part", "expire")


bp.register_error_handler(HTTPException, http_error_page)


def _payment_or_404(short_id: str):
    payment = payments.find_by_short_id(db(), short_id)
    if payment is None:
        return None, error_page(404, "There is no payment at this address. Check the link you were given.")
    return payment, None


def _checkout_page(payment, http_status: int = 200, notice: str | None = None):
    s = deps().settings
    network = s.networks.get(payment.network)
    uri = payment_uri(payment, network)
    merchant = db().get(Merchant, payment.merchant_id)
    assert merchant is not None  # a payment's merchant (the foreign key cascades)
    cancelable = payments.cancel_refusal(db(), payment) is None
    return page(
        "pages/checkout.html",
        http_status,
        form_targets=(payment.cancel_url,),
        payment=payment,
        network=network,
        status=payments.public_view(payment, cancelable=cancelable),
        uri=uri,
        qr=qr_svg(uri),
        business_name=merchant.business_name,
        open=payment.status in payments.OPEN,
        cancelable=cancelable,
        notice=notice,
        arrivals=arrivals(db(), payment, network),
        back_url=back_url(payment),
        time_left=time_left(payment.expires_at, utcnow()),
        auto_complete_seconds=int(s.test_mode_complete_seconds),
        short_hash=short_hash,
    )


@bp.get("/pay/<short_id>")
def checkout(short_id: str):
    payment, missing = _payment_or_404(short_id)
    return missing or _checkout_page(payment)


@bp.get("/pay/<short_id>/receipt")
def receipt(short_id: str):
    payment, missing = _payment_or_404(short_id)
    if missing:
        return missing
    if payment.status != PaymentStatus.COMPLETED:
        return error_page(
            404,
            f"There is no receipt for this payment: it is {status_words(payment.status)}. "
            "A receipt exists once a payment is complete.",
        )
    network = deps().settings.networks.get(payment.network)
    merchant = db().get(Merchant, payment.merchant_id)
    assert merchant is not None
    return page(
        "pages/receipt.html",
        payment=payment,
        network=network,
        status=payments.public_view(payment, cancelable=False),
        business_name=merchant.business_name,
        arrivals=arrivals(db(), payment, network),
        short_hash=short_hash,
    )


@bp.get("/pay/<short_id>/status")
def status(short_id: str):
    payment = payments.find_by_short_id(db(), short_id)
    if payment is None:
        return secure(jsonify({"error": "not found"}), ()), 404
    cancelable = payments.cancel_refusal(db(), payment) is None
    return secure(jsonify(payments.public_view(payment, cancelable=cancelable)))


@bp.post("/pay/<short_id>/cancel")
def cancel(short_id: str):
    payment, missing = _payment_or_404(short_id)
    if missing:
        return missing
    try:
        with transaction() as session:
            payments.cancel(session, payment)
    except InvalidTransition:
        db().refresh(payment)
        return _checkout_page(payment, 409, why_not_canceled(payment))
    return redirect(payment.cancel_url or url_for("pages.checkout", short_id=payment.short_id), 303)


@bp.post("/pay/<short_id>/test/<action>")
def test_action(short_id: str, action: str):
    payment, missing = _payment_or_404(short_id)
    if missing or action not in TEST_ACTIONS:
        return missing or error_page(404)
    if not payment.test_mode:
        return error_page(403, "Only test payments can be paid from this page.")
    try:
        with transaction() as session:
            if action == "expire":
                payments.let_expire(session, payment)
            else:
                payments.pay(session, payment, part=action == "pay-part")
    except InvalidTransition:
        pass  # already settled: the page shows its final state
    return redirect(url_for("pages.checkout", short_id=payment.short_id), 303)


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
    return page(
        "pages/product.html",
        status,
        form_targets=(s.checkout_url,),
        product=product,
        business_name=merchant.business_name,
        pairs=pairs,
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
    except DomainError as exc:
        return _product_page(product, merchant, 422, exc.message)
    return redirect(created.payment["checkout_url"], 303)


# ---- a refund's claim page (DESIGN §8) ------------------------------------------------


def _refund_or_404(token: str):
    refund = find_by_claim_token(db(), token)
    if refund is None:
        return None, error_page(404, "There is no refund at this address. Check the link you were given.")
    return refund, None


def _refund_state(refund: Refund) -> str:
    """What the page shows: the refund's status, or expired once an unclaimed refund is past
    its time (the expirer marks it soon after)."""
    if refund.status == RefundStatus.AWAITING_ADDRESS and refund.expires_at <= utcnow():
        return RefundStatus.EXPIRED.lower()
    return refund.status.lower()


def _refund_page(refund: Refund, http_status: int = 200, error: str | None = None, address: str = ""):
    merchant = db().get(Merchant, refund.merchant_id)
    network = deps().settings.networks.get(refund.network)
    return page(
        "pages/refund.html",
        http_status,
        refund=refund,
        state=_refund_state(refund),
        amount=units_text(refund.amount_units, refund.decimals),
        payout_amount=None if (due := due_units(refund)) is None else units_text(due, refund.decimals),
        paid=None if refund.payout_units is None else units_text(int(refund.payout_units), refund.decimals),
        business_name=merchant.business_name if merchant else None,
        network_kind=network.kind if network else "evm",
        payout_url=network.explorer_url(refund.transaction_hash) if network else None,
        error=error,
        address=address,
    )


@bp.get("/refunds/<token>")
def refund(token: str):
    found, missing = _refund_or_404(token)
    return missing or _refund_page(found)


@bp.post("/refunds/<token>")
def claim(token: str):
    """The customer's address (CSRF-checked by ``csrf.protect``): 400 with the reason when it
    cannot receive the refund; 409 once the refund no longer waits for one."""
    found, missing = _refund_or_404(token)
    if missing:
        return missing
    address = request.form.get("address", "")[:200]
    try:
        with transaction() as session:
            claim_refund(session, token, address, registry=deps().settings.networks)
    except InvalidClaim as exc:
        return _refund_page(found, 400, exc.message, address)
    except InvalidTransition as exc:
        db().refresh(found)
        return _refund_page(found, 409, exc.message)
    except NotFound:
        return error_page(404, "There is no refund at this address. Check the link you were given.")
    return redirect(url_for("pages.refund", token=token), 303)


@bp.post("/refunds/<token>/simulate")
def simulate_refund_payout(token: str):
    """A test refund's "simulate the payout" button (CSRF-checked): the merchant's payout,
    simulated, completes it (test mode moves no funds). 404 for a live refund, which only
    its payout on chain completes; 409 once it no longer waits for one."""
    found, missing = _refund_or_404(token)
    if missing:
        return missing
    if not found.test_mode:
        return error_page(404, "There is no test control for a live refund.")
    try:
        with transaction() as session:
            simulate_payout(session, found.id)
    except InvalidTransition as exc:
        db().refresh(found)
        return _refund_page(found, 409, exc.message)
    return redirect(url_for("pages.refund", token=token), 303)
