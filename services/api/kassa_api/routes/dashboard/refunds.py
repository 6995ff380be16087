"""Refunds: the list (status filter), one refund's page (its claim link; once claimed what to
pay, ``payout_amount``, as an EIP-681 / BIP-21 URI with its QR code, copy buttons, a browser
wallet button and a transaction hash form; for a test refund a button that simulates the
payout instead), refunding from a payment's page, and cancel (not once a payout is seen)."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Blueprint, abort, redirect, request, url_for

from kassa_common.chains.uris import payment_request
from kassa_common.errors import DomainError, NotFound
from kassa_common.models import Payment, Refund
from kassa_common.paging import page_meta
from kassa_common.pricing.amounts import units_text
from kassa_common.refunds import onchain, payouts
from kassa_common.refunds import transitions as refunds
from kassa_common.refunds.queries import list_refunds
from kassa_common.refunds.shape import CreateRefund, payout_units, refund_out
from kassa_common.statuses import RefundStatus
from kassa_api import query
from kassa_api.actors import dashboard_actor
from kassa_api.checkout import qr_svg
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import current_owner, get_payment_or_404, login_required, render
from kassa_api.routes.dashboard.forms import FormError, as_sentence, form_text, refusal, validated
from kassa_api.routes.dashboard.payment_page import detail_page

bp = Blueprint("refunds", __name__)
PAGE_SIZE = 20
NO_REFUND = "No such refund in this mode."
STATUSES = tuple(RefundStatus)
HASH_FIELDS = ("transaction_hash",)


def get_refund_or_404(refund_id: str) -> Refund:
    owner = current_owner()
    try:
        rid = uuid.UUID(refund_id)
    except ValueError:
        abort(404, description=NO_REFUND)
    refund = db().get(Refund, rid)
    if refund is None or refund.merchant_id != owner.merchant_id or refund.test_mode != owner.test_mode:
        abort(404, description=NO_REFUND)
    return refund


@bp.get("/refunds")
@login_required
def index():
    status = query.choice("status", STATUSES)
    page_no = query.page_number()
    rows, total = list_refunds(db(), current_owner(), status=status, page=page_no, page_size=PAGE_SIZE)
    return render(
        "refunds.html",
        rows=[(r, short_id, units_text(int(r.amount_units), r.decimals)) for r, short_id in rows],
        total=total,
        page=page_no,
        pages=page_meta(page_no, PAGE_SIZE, total)["pages"],
        status=status,
        statuses=STATUSES,
    )


def _page(refund: Refund, status: int = 200, **extra):
    settings = deps().settings
    network = settings.networks.get(refund.network)
    payment = db().get(Payment, refund.payment_id)
    out = refund_out(refund, settings)
    context: dict[str, Any] = {"uri": None, "qr": None, "wallet": None, "seen": None}
    if refund.status == RefundStatus.AWAITING_PAYMENT and refund.address:
        due = payout_units(refund)  # payout_amount: the watcher knows it by its tag
        uri = payment_request(network, refund.token, refund.address or "", due, refund.decimals)
        context.update(uri=uri, qr=qr_svg(uri))
        if network is not None and network.kind == "evm" and not refund.test_mode:
            token = network.token(refund.token)
            context["wallet"] = {
                "units": str(due),
                "token": token.contract if token and not token.native else None,
                "chain_id": network.chain_id,
            }
        if refund.transfer_ref:
            context["seen"] = {
                "tx": refund.transfer_ref.split(":")[0],
                "confirmations": refund.confirmations,
                "required": network.required_confirmations if network else "?",
            }
    hint = "txid (64 hex digits)" if network is not None and network.kind == "bitcoin" else "0x… (66 characters)"
    return render("refund.html", status, refund=out, row=refund, payment=payment, hash_hint=hint, **context, **extra)


@bp.get("/refunds/<refund_id>")
@login_required
def detail(refund_id: str):
    return _page(get_refund_or_404(refund_id))


@bp.post("/refunds/<refund_id>/complete")
@login_required
def complete(refund_id: str):
    """The transaction hash form: the same check as ``POST /refunds/:id/complete``."""
    refund = get_refund_or_404(refund_id)
    tx_hash = request.form.get("transaction_hash", "")
    if not tx_hash.strip():
        empty = FormError({"transaction_hash": "Enter the hash of the transaction that paid the refund."})
        return _page(refund, 400, **empty.context(HASH_FIELDS))
    reader = None if refund.test_mode else onchain.reader_for(deps().settings.networks.get(refund.network))
    try:
        with transaction() as s:
            payouts.complete_with_hash(s, current_owner(), refund.id, tx_hash, reader, actor=dashboard_actor())
    except onchain.ChainUnavailable as exc:
        return _page(get_refund_or_404(refund_id), 503, error=f"{exc}. Try again in a moment.")
    except onchain.PayoutRefused as exc:  # what the hash names does not pay this refund
        refused = FormError({"transaction_hash": as_sentence(exc.message)})
        return _page(get_refund_or_404(refund_id), 400, **refused.context(HASH_FIELDS))
    except DomainError as exc:
        return _page(get_refund_or_404(refund_id), 409, **refusal(exc, HASH_FIELDS))
    finally:
        if reader is not None:
            reader.close()
    return redirect(url_for("dashboard.refunds.detail", refund_id=refund_id), 303)


@bp.post("/refunds/<refund_id>/simulate")
@login_required
def simulate(refund_id: str):
    """A test refund's payout, simulated (test mode moves no funds): it is completed at once."""
    refund = get_refund_or_404(refund_id)
    try:
        with transaction() as s:
            payouts.simulate_payout(s, refund.id)
    except DomainError as exc:
        return _page(get_refund_or_404(refund_id), 409, error=exc.message)
    return redirect(url_for("dashboard.refunds.detail", refund_id=refund_id), 303)


@bp.post("/refunds/<refund_id>/cancel")
@login_required
def cancel(refund_id: str):
    refund = get_refund_or_404(refund_id)
    if request.form.get("confirm") != "yes":
        unticked = FormError({"confirm": "Tick the box to confirm the cancel."})
        return _page(refund, 400, **unticked.context(["confirm"]))
    try:
        with transaction() as s:
            refunds.cancel_refund(s, current_owner(), str(refund.id), actor=dashboard_actor())
    except NotFound:
        abort(404, description=NO_REFUND)
    except DomainError as exc:
        return _page(get_refund_or_404(refund_id), 409, error=exc.message)
    return redirect(url_for("dashboard.refunds.detail", refund_id=refund_id), 303)


@bp.post("/payments/<ref>/refunds")
@login_required
def create(ref: str):
    payment = get_payment_or_404(ref)
    settings = deps().settings
    try:
        body = validated(
            CreateRefund,
            {"amount": form_text("amount"), "reason": form_text("reason"), "network": form_text("network")},
        )
        with transaction() as s:
            refund = refunds.create_refund(
                s,
                current_owner(),
                str(payment.id),
                body.amount,
                body.reason,
                network=body.network,
                claim_days=settings.refund_claim_days,
                actor=dashboard_actor(),
            )
            refund_id = refund.id
    except NotFound:
        abort(404, description=NO_REFUND)
    except (FormError, DomainError) as exc:
        # the payment's page again, the problems beside the fields and what was typed kept
        shown = refusal(exc, ("amount", "reason"))
        return detail_page(payment, 422, errors=shown["errors"], refund_error=shown["error"])
    return redirect(url_for("dashboard.refunds.detail", refund_id=refund_id), 303)
