"""Sweeps: forwarder-mode funds moved from the payments' deposit addresses to the
merchant's settlement address, newest first, each with its transaction."""
from __future__ import annotations

from flask import Blueprint

from kassa_api import queries
from kassa_api.deps import db, deps
from kassa_api.routes.dashboard.common import current_owner, login_required, render
from kassa_common.chains.networks import shipped
from kassa_common.chains.rates import units_text

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
    return render("sweeps.html", rows=queries.swept(db(), owner.merchant_id, owner.test_mode), amount=token_amount)
