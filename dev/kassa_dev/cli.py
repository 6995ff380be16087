"""``kassa dev ...``: development helpers for the local chain.

``kassa dev pay SHORT_ID [--amount DECIMAL]`` pays a live LOCAL_EVM payment from anvil's
first account: the amount still due by default, or ``--amount`` in token units.

The operator CLI does not know about this module: the package registers ``add_parser``
in the ``kassa.cli`` entry-point group, and ``kassa`` calls every plugin it finds there.
"""

from __future__ import annotations

import argparse
import json
from decimal import Decimal, InvalidOperation

from kassa_common.cli import unit_of_work_for
from kassa_common.config import Settings
from kassa_common.models import Payment
from kassa_common.payments import find_by_short_id, remaining_units
from kassa_common.pricing.amounts import from_base_units, to_base_units
from kassa_dev.listen import add_listen_parser

NETWORK = "LOCAL_EVM"


def _decimal(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not a decimal amount: {text!r}") from None
    if not value.is_finite() or value <= 0:
        raise argparse.ArgumentTypeError("the amount must be a positive number")
    return value


def find_payment(settings: Settings, short_id: str) -> Payment:
    with unit_of_work_for(settings) as s:
        payment = find_by_short_id(s, short_id.strip())
    if payment is None:
        raise ValueError(f"no payment with short id {short_id!r}")
    if payment.test_mode:
        raise ValueError(
            f"payment {short_id} is a test-mode payment: it never touches a chain "
            "(use the checkout page's test controls)"
        )
    if payment.network.upper() != NETWORK:
        raise ValueError(f"payment {short_id} is on {payment.network}; `kassa dev pay` only pays on {NETWORK}")
    return payment


def amount_units(payment: Payment, amount: Decimal | None) -> int:
    if amount is not None:
        return to_base_units(amount, payment.decimals)
    remaining = remaining_units(payment)
    if remaining <= 0:
        raise ValueError(f"payment {payment.short_id} has nothing left to pay; pass --amount to pay anyway")
    return remaining


def cmd_dev_pay(args: argparse.Namespace, settings: Settings) -> None:
    from web3 import Web3

    from kassa_dev import chain

    payment = find_payment(settings, args.short_id)
    network = settings.networks.get(NETWORK)
    token = network.token(payment.token) if network else None
    if token is None:
        raise ValueError(f"{payment.token} is not a {NETWORK} token")
    units = amount_units(payment, args.amount)
    url = network.rpc_url or chain.DEFAULT_RPC_URL
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))
    if not chain.rpc_answers(url):
        raise ValueError(f"no {NETWORK} node answers at {url} (start it with `make run`)")
    if network.chain_id is not None and w3.eth.chain_id != network.chain_id:
        raise ValueError(f"the {NETWORK} node at {url} is on chain id {w3.eth.chain_id}, not {network.chain_id}")
    tx_hash = chain.pay(w3, to=payment.address, amount_base_units=units, token_contract=token.contract)
    amount = from_base_units(units, token.decimals)
    data = {
        "tx_hash": tx_hash,
        "short_id": payment.short_id,
        "address": payment.address,
        "token": token.symbol,
        "amount": str(amount),
    }
    print(
        json.dumps(data)
        if getattr(args, "json", False)
        else f"paid {amount} {token.symbol} to {payment.address} in {tx_hash}"
    )


def add_parser(sub) -> None:
    """Register ``kassa dev`` on the top-level subparsers."""
    about = "development helpers: pay on the local chain, receive webhooks"
    dev = sub.add_parser("dev", help=about).add_subparsers(dest="cmd", required=True)
    p = dev.add_parser("pay", help=f"pay a {NETWORK} payment from anvil's first account")
    p.add_argument("short_id")
    p.add_argument("--amount", type=_decimal, help="token units (default: what is still due)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(run=cmd_dev_pay)
    add_listen_parser(dev)
