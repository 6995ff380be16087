"""A refund's claim page (/refunds/<claim token>, DESIGN §8): the customer says where the
refund goes; a test refund's payout can be simulated from it."""

from __future__ import annotations

from flask import redirect, request, url_for

from kassa_common.errors import InvalidClaim, InvalidTransition, NotFound
from kassa_common.models import Merchant, Refund
from kassa_common.pricing.amounts import units_text
from kassa_common.refunds.payouts import simulate_payout
from kassa_common.refunds.queries import find_by_claim_token
from kassa_common.refunds.shape import payout_amount
from kassa_common.refunds.transitions import claim_refund
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import utcnow
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.pages.common import bp
from kassa_api.web import error_page, page


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
        payout_amount=payout_amount(refund),
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
