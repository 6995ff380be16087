"""One payment's page: its history, transfers, sweeps, and the refund forms it offers (what
is refundable per network) with the refunds made; shown by the payments module, and again by
the refunds module when a refund form is refused."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from kassa_common import payments
from kassa_common.models import Payment, Refund
from kassa_common.payments import reports
from kassa_common.payments.refunded import NONE, decimals_on, received, refund_totals, refundable
from kassa_common.pricing.amounts import units_text
from kassa_common.refunds.queries import refunds_of
from kassa_common.sweeps import holds
from kassa_common.transfers import transfers_of
from kassa_api.deps import db, deps
from kassa_api.routes.dashboard.common import render
from kassa_api.routes.dashboard.sweeps import token_amount


def detail_page(payment: Payment, status: int = 200, /, **context):
    """The payment's page; ``context``: a refused refund form's ``errors`` and ``refund_error``."""
    history = reports.payment_history(db(), payment.id)
    sweepable = {n.name for n in deps().settings.networks if n.kind == "evm" and n.rpc_url and n.forwarder_factory}
    shown = payments.payment_object(payment)
    transfers = shown["transfers"]  # with why each does not count
    held = holds.listing(db(), payment_ref=str(payment.id)) if payment.settlement_address else []
    return render(
        "payment.html",
        status,
        payment=payment,
        cancel_refusal=payments.cancel_refusal(db(), payment),
        amount=token_amount,
        sweepable=sweepable,
        transfers=transfers,
        crypto=shown,  # the token amounts as decimal text: crypto_amount, amount_received, amount_due
        held=held,
        refund_offers=refund_offers(db(), payment),
        refunds=refunds_listed(db(), payment),
        **history._asdict(),
        **context,
    )


def refunds_listed(session: Session, payment: Payment) -> list[tuple[Refund, str]]:
    """The payment's refunds, newest first, with their amounts as text."""
    return [(r, units_text(int(r.amount_units), r.decimals)) for r in refunds_of(session, payment.id)]


def refund_offers(session: Session, payment: Payment) -> list[dict[str, Any]]:
    """What the payment's page offers to refund, per network with something refundable: the
    excess of an over-paid payment, everything of late or wrong-network funds (else all)."""
    transfers = transfers_of(session, [payment.id])[payment.id]
    totals = refund_totals(session, [payment.id]).get(payment.id, NONE)
    offers = []
    for network, left in sorted(
        refundable(payment, transfers, totals).items(), key=lambda kv: kv[0] != payment.network
    ):
        decimals = decimals_on(payment, network) or payment.decimals
        units, why = left, "everything refundable"
        if network != payment.network:
            why = f"everything sent on the wrong network ({network})"
        elif payment.status in ("EXPIRED", "CANCELED"):
            why = "everything received: the payment was paid after it closed"
        else:
            got = received(payment, transfers).get(network, 0)
            excess = got - int(payment.crypto_amount_units)
            if payment.status == "COMPLETED" and excess > 0:
                units, why = min(left, excess), "the excess over what was due"
        offers.append(
            {
                "network": network,
                "amount": units_text(units, decimals),
                "most": units_text(left, decimals),
                "why": why,
            }
        )
    return offers
