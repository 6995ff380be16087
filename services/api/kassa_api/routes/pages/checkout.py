"""The hosted checkout (/pay/<short_id>): the payment's page, its receipt, the status the page
polls, the customer's cancel, and a test payment's buttons."""

from __future__ import annotations

from flask import jsonify, redirect, url_for

from kassa_common import payments
from kassa_common.errors import InvalidTransition
from kassa_common.models import Merchant
from kassa_common.statuses import PaymentStatus
from kassa_common.timefmt import utcnow
from kassa_api.checkout import (
    arrivals,
    back_url,
    payment_uri,
    qr_svg,
    short_hash,
    status_words,
    time_left,
    wallet_request,
    why_not_canceled,
)
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.pages.common import bp
from kassa_api.web import error_page, page, secure

TEST_ACTIONS = ("pay", "pay-part", "expire")


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
        wallet=wallet_request(payment, network),
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
