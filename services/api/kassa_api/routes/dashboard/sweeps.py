"""Sweeps: forwarder-mode funds moved from the payments' deposit addresses to the
merchant's settlement address, newest first, each with its transaction; and above them
the deposits the sweeper holds (their flush failed: e.g. the settlement contract refused
the native coin), with the reason, until the operator retries them."""

from __future__ import annotations

from flask import Blueprint

from kassa_common.chains import forwarder
from kassa_common.chains.networks import shipped
from kassa_common.payments import reports
from kassa_common.pricing.amounts import units_text
from kassa_common.sweeps import holds
from kassa_api.deps import db, deps
from kassa_api.routes.dashboard.common import current_owner, login_required, render

bp = Blueprint("sweeps", __name__)


def token_amount(network: str, symbol: str, units) -> str:
    """An amount in a token's own units (the network's registry knows its decimals; a network
    not configured here, e.g. where funds came on the wrong network, is in the shipped file)."""
    net = deps().settings.networks.get(network) or shipped().get(network)
    token = net.token(symbol) if net else None
    return f"{units_text(int(units), token.decimals)} {symbol}" if token else f"{int(units)} {symbol} (base units)"


@bp.get("/sweeps")
@login_required
def index():
    owner = current_owner()
    held = holds.listing(db(), merchant_id=owner.merchant_id, test_mode=owner.test_mode, limit=100)
    return render(
        "sweeps.html",
        rows=reports.swept(db(), owner.merchant_id, owner.test_mode),
        held=held,
        native_gas=forwarder.NATIVE_GAS,
        amount=token_amount,
    )
