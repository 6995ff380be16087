"""Wallets: the extended public key each payment's address derives from, per chain and mode.

Kassa never holds a private key. The page shows the key's first derived address, so the
merchant can check it against their wallet before taking payments.
"""
from __future__ import annotations

from flask import Blueprint, request

from kassa_api import queries
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import current_owner, login_required, render
from kassa_common import accounts
from kassa_common.chains.hd import derive_address
from kassa_common.errors import DomainError

bp = Blueprint("wallets", __name__)


def first_address(chain: str, xpub: str, test_mode: bool) -> str:
    hrp = None if chain == "evm" else ("tb" if test_mode else "bc")
    return derive_address(chain, xpub, 0, bech32_hrp=hrp)


def _page(status: int = 200, /, **context):
    owner = current_owner()
    xpubs = queries.wallet_xpubs(db(), owner.merchant_id, owner.mode)
    chains = [{"chain": c, "xpub": xpubs.get(c),
               "first_address": first_address(c, xpubs[c], owner.test_mode) if c in xpubs else None}
              for c in accounts.CHAINS]
    return render("wallets.html", status, chains=chains, **context)


@bp.route("/wallets", methods=["GET", "POST"])
@login_required
def index():
    if request.method != "POST":  # GET or HEAD
        return _page()
    owner, chain = current_owner(), request.form.get("chain", "")
    try:
        with transaction() as s:
            saved = accounts.set_wallet(s, owner.merchant_id, owner.mode, chain, request.form.get("xpub", ""),
                                        allow_test_keys=deps().settings.development)
    except DomainError as exc:
        return _page(422, error=exc.message)
    return _page(saved=chain, warning=saved.warning)
