"""``kassa dev ...``: development helpers for the local chains.

``kassa dev pay SHORT_ID [--amount DECIMAL]`` pays a live LOCAL_EVM payment from anvil's
first account, or a live LOCAL_LITECOIN payment from the regtest litecoind's funded wallet
(``kassa_dev.litecoin``): the amount still due by default, or ``--amount`` in token units.

``kassa dev pay-refund REFUND_ID [--amount DECIMAL]`` pays a claimed live LOCAL_EVM refund
from anvil's second account (the merchant's wallet in the walk-through): its
``payout_amount`` (the amount plus the claim's tag), in its token (an ERC-20 transfer, or
native coin), to the address the customer claimed it to. A claimed test-mode refund (any
network) never touches a chain: its payout is simulated and it is completed at once.

The operator CLI does not know about this module: the package registers ``add_parser``
in the ``kassa.cli`` entry-point group, and ``kassa`` calls every plugin it finds there.
"""

from __future__ import annotations

import argparse
import json
from decimal import Decimal, InvalidOperation

from kassa_common.cli import unit_of_work_for
from kassa_common.config import Settings
from kassa_common.models import Payment, Refund
from kassa_common.payments import find_by_short_id, remaining_units
from kassa_common.pricing.amounts import from_base_units, to_base_units
from kassa_common.refunds.shape import payout_units
from kassa_dev.listen import add_listen_parser

NETWORK = "LOCAL_EVM"
PAYABLE = (NETWORK, "LOCAL_LITECOIN")  # the networks `kassa dev pay` pays on


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
    if payment.network.upper() not in PAYABLE:
        raise ValueError(f"payment {short_id} is on {payment.network}; `kassa dev pay` pays on {' and '.join(PAYABLE)}")
    return payment


def amount_units(payment: Payment, amount: Decimal | None) -> int:
    if amount is not None:
        return to_base_units(amount, payment.decimals)
    remaining = remaining_units(payment)
    if remaining <= 0:
        raise ValueError(f"payment {payment.short_id} has nothing left to pay; pass --amount to pay anyway")
    return remaining


def cmd_dev_pay(args: argparse.Namespace, settings: Settings) -> None:
    from kassa_dev import chain

    payment = find_payment(settings, args.short_id)
    network = settings.networks.get(payment.network)
    token = network.token(payment.token) if network else None
    if network is None or token is None:
        raise ValueError(f"{payment.token} is not a {payment.network} token")
    units = amount_units(payment, args.amount)
    if network.kind == "bitcoin":
        tx_hash = _pay_litecoin(network, payment.address, units)
    else:
        _, w3 = _node(settings)
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


def _pay_litecoin(network, address: str, units: int) -> str:
    from kassa_dev import litecoin

    if not network.rpc_url:
        raise ValueError(f"{network.name} is not configured ({network.name}_RPC_URL; `make run` sets it)")
    try:
        return litecoin.pay(network.rpc_url, address, units, chain=network.bitcoin_chain or "regtest")
    except litecoin.LitecoindError as exc:
        raise ValueError(f"{network.name}: {exc}") from None


def _node(settings: Settings):
    from web3 import Web3

    from kassa_dev import chain

    network = settings.networks.get(NETWORK)
    if network is None:
        raise ValueError(f"{NETWORK} is not configured")
    url = network.rpc_url or chain.DEFAULT_RPC_URL
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))
    if not chain.rpc_answers(url):
        raise ValueError(f"no {NETWORK} node answers at {url} (start it with `make run`)")
    if network.chain_id is not None and w3.eth.chain_id != network.chain_id:
        raise ValueError(f"the {NETWORK} node at {url} is on chain id {w3.eth.chain_id}, not {network.chain_id}")
    return network, w3


def find_refund(settings: Settings, refund_id: str) -> Refund:
    import uuid

    try:
        rid = uuid.UUID(refund_id.strip())
    except ValueError:
        raise ValueError(f"not a refund id: {refund_id!r}") from None
    with unit_of_work_for(settings) as s:
        refund = s.get(Refund, rid)
    if refund is None:
        raise ValueError(f"no refund with id {refund_id}")
    if refund.test_mode:
        return refund
    if refund.network.upper() != NETWORK:
        raise ValueError(f"refund {refund_id} is on {refund.network}; `kassa dev pay-refund` only pays on {NETWORK}")
    if refund.status != "AWAITING_PAYMENT" or not refund.address:
        why = "the customer has not claimed it yet" if refund.status == "AWAITING_ADDRESS" else f"it is {refund.status}"
        raise ValueError(f"refund {refund_id} cannot be paid: {why}")
    return refund


def simulate_refund(args: argparse.Namespace, settings: Settings, refund: Refund) -> None:
    """A test refund's payout, simulated (no chain): completed at once."""
    from kassa_common.errors import DomainError
    from kassa_common.refunds.payouts import simulate_payout

    try:
        with unit_of_work_for(settings) as s:
            done = simulate_payout(s, refund.id)
            data = {
                "tx_hash": done.transaction_hash,
                "refund_id": str(done.id),
                "address": done.address,
                "token": done.token,
                "amount": str(from_base_units(int(done.payout_units or 0), done.decimals)),
                "simulated": True,
            }
    except DomainError as exc:
        raise ValueError(f"refund {refund.id} cannot be paid: {exc.message}") from None
    print(
        json.dumps(data)
        if getattr(args, "json", False)
        else f"simulated the payout of test refund {data['refund_id']}: {data['amount']} {data['token']} to "
        f"{data['address']} in {data['tx_hash']}"
    )


def cmd_dev_pay_refund(args: argparse.Namespace, settings: Settings) -> None:
    from kassa_dev import chain

    refund = find_refund(settings, args.refund_id)
    if refund.test_mode:
        if refund.status != "AWAITING_PAYMENT" or not refund.address:
            why = (
                "the customer has not claimed it yet"
                if refund.status == "AWAITING_ADDRESS"
                else f"it is {refund.status}"
            )
            raise ValueError(f"refund {args.refund_id} cannot be paid: {why}")
        simulate_refund(args, settings, refund)
        return
    network, w3 = _node(settings)
    token = network.token(refund.token)
    if token is None:
        raise ValueError(f"{refund.token} is not a {NETWORK} token")
    due = payout_units(refund)
    units = to_base_units(args.amount, token.decimals) if args.amount is not None else due
    accounts = w3.eth.accounts
    if len(accounts) < 2:
        raise ValueError(f"the {NETWORK} node has no second unlocked account to pay from")
    tx_hash = chain.pay(
        w3, to=refund.address, amount_base_units=units, token_contract=token.contract, sender=accounts[1]
    )
    amount = from_base_units(units, token.decimals)
    data = {"tx_hash": tx_hash, "refund_id": str(refund.id), "address": refund.address, "token": token.symbol}
    data["amount"] = str(amount)
    print(
        json.dumps(data)
        if getattr(args, "json", False)
        else f"paid refund {refund.id}: {amount} {token.symbol} to {refund.address} in {tx_hash}"
    )


def add_parser(sub) -> None:
    """Register ``kassa dev`` on the top-level subparsers."""
    about = "development helpers: pay on the local chain, receive webhooks"
    dev = sub.add_parser("dev", help=about).add_subparsers(dest="cmd", required=True)
    p = dev.add_parser("pay", help=f"pay a {' or '.join(PAYABLE)} payment from the local node's funded account")
    p.add_argument("short_id")
    p.add_argument("--amount", type=_decimal, help="token units (default: what is still due)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(run=cmd_dev_pay)
    r = dev.add_parser(
        "pay-refund", help=f"pay a claimed {NETWORK} refund from anvil's second account (a test refund: simulated)"
    )
    r.add_argument("refund_id")
    r.add_argument("--amount", type=_decimal, help="token units (default: the refund's payout_amount)")
    r.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    r.set_defaults(run=cmd_dev_pay_refund)
    add_listen_parser(dev)
