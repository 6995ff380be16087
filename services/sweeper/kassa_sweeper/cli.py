"""``kassa contracts deploy`` and ``kassa sweep``: the forwarder's operator commands.

Registered in the ``kassa.cli`` entry-point group by this package (the operator CLI in
``kassa_common`` never imports a service):

- ``kassa contracts deploy --network N [--private-key K]`` deploys the forwarder factory
  through the deterministic deployer (idempotent; gas from ``--private-key`` or
  ``SWEEPER_PRIVATE_KEY``).
- ``kassa sweep --network N [--email E] [--dry-run]`` sweeps now every deposit on N with
  confirmed funds, whatever ``SWEEP_MIN_USD`` and ``SWEEP_MAX_AGE_HOURS`` say (the
  operator asked), through the same steps as the sweeper process (which may run
  meanwhile: they take turns), and waits for the sweeps to confirm; ``--dry-run`` shows
  what it would move and what that would cost. Held deposits are left out.
- ``kassa sweep --held [--network N] [--email E]`` lists the held deposits (and those
  waiting to be swept on their own) with their reasons, and what the key spent in the
  last hour against ``SWEEP_MAX_SPEND_USD_PER_HOUR`` (``held.py``).
- ``kassa sweep --network N --retry-held PAYMENT`` releases a held deposit and sweeps it
  now, on its own (the operator fixed the cause, e.g. the settlement contract's
  ``receive``); if it fails again it is held again, with the new reason.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any, cast

from kassa_common.accounts import merchants
from kassa_common.bootstrap import process_engine
from kassa_common.chains.networks import Network, Token
from kassa_common.chains.rpc import RpcUnavailable
from kassa_common.config import Settings, SweeperSettings
from kassa_common.db import make_session_factory, unit_of_work
from kassa_common.models import Sweep
from kassa_common.pricing.amounts import units_text
from kassa_common.pricing.service import make_rates
from kassa_common.timefmt import utcnow
from kassa_sweeper import configured, held
from kassa_sweeper.chain import DepositChain, PoolProvider, web3_for
from kassa_sweeper.deploy import deploy_factory
from kassa_sweeper.engine import NetworkSweeper, Outcome
from kassa_sweeper.isolation import call_failure
from kassa_sweeper.txs import Signer, market_fees


def _print(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(json.dumps(data) if getattr(args, "json", False) else text)


def evm_network(settings: Settings, name: str) -> Network:
    network = settings.networks.get(name)
    if network is None or network.kind != "evm":
        raise ValueError(f"{name} is not an EVM network of this server (GET /v1/api/networks lists them)")
    if not network.rpc_url:
        raise ValueError(f"{network.name} has no RPC node: set {network.name}_RPC_URLS (or {network.name}_RPC_URL)")
    return network


def _chain(network: Network) -> DepositChain:
    """The network's deposits, over its nodes; refuses at once when none is on the network's
    chain (each node's chain id is checked before it serves, and after every failover)."""
    w3 = web3_for(network)
    try:
        cast(PoolProvider, w3.provider).pool.call("eth_chainId")
    except RpcUnavailable as exc:
        raise ValueError(str(exc)) from None
    return DepositChain(network, w3)


def cmd_contracts_deploy(args: argparse.Namespace, settings: Settings) -> None:
    network = evm_network(settings, args.network)
    key = args.private_key or settings.sweeper.private_key
    if not key:
        raise ValueError("give the key that pays the gas: --private-key, or SWEEPER_PRIVATE_KEY")
    if network.forwarder_factory is None:
        raise ValueError(f"networks.json has no forwarder_factory for {network.name}")
    address, tx_hash = deploy_factory(_chain(network).w3, Signer(key))
    data = {"network": network.name, "factory": address, "deployed": tx_hash is not None, "tx_hash": tx_hash}
    _print(
        args,
        data,
        f"forwarder factory {address} on {network.name}: "
        + (f"deployed in {tx_hash}" if tx_hash else "already deployed"),
    )


def _sweeper(settings: Settings, options: SweeperSettings, network: Network, engine) -> NetworkSweeper:
    return NetworkSweeper(
        network,
        make_session_factory(engine),
        _chain(network),
        configured.signer(options),
        make_rates(settings),
        batch_size=options.batch_size,
        cap_usd=options.max_spend_usd_per_hour,
    )


def _merchant_id(email: str | None, sessions):
    if email is None:
        return None
    with unit_of_work(sessions) as s:
        return merchants.merchant_by_email(s, email).id


def cmd_sweep(args: argparse.Namespace, settings: Settings) -> None:
    options = configured.checked(settings)
    if args.held:
        return held.show(args, settings, options, _print)
    if not args.network:
        raise ValueError("give the network: --network N (or --held to list the held deposits)")
    network = evm_network(settings, args.network)
    if network.forwarder_factory is None:
        raise ValueError(f"forwarder settlement is not available on {network.name}")
    if configured.signer(options) is None and not args.dry_run:
        raise ValueError("SWEEPER_PRIVATE_KEY is not set: it pays the sweeps' gas")
    engine = process_engine(settings, "cli", pool_size=1)
    try:
        sweeper = _sweeper(settings, options, network, engine)
        merchant_id = _merchant_id(args.email, sweeper.sessions)
        if args.retry_held:
            return _sweep_now(args, sweeper, merchant_id, held.release(sweeper.sessions, network, args.retry_held))
        (_dry_run if args.dry_run else _sweep_now)(args, sweeper, merchant_id)
    finally:
        engine.dispose()


def _amounts(network: Network, held: dict[str, Any]) -> str:
    return ", ".join(f"{units_text(int(u), _token(network, t).decimals)} {t}" for t, u in held.items())


def _token(network: Network, symbol: str) -> Token:
    token = network.token(symbol)
    if token is None:
        raise ValueError(f"{network.name} has no token {symbol}")
    return token


def _dry_run(args, sweeper: NetworkSweeper, merchant_id) -> None:
    network = sweeper.network
    with sweeper.sessions() as s:
        plan = sweeper.plan(s, force=True, merchant_id=merchant_id)
    deposits = sweeper.planned(plan)
    gas, failure = 0, None
    try:
        for factory in {d["factory"] for d in deposits}:  # one flushMany per factory
            gas += sweeper.estimate_gas(sweeper.call_for([d for d in deposits if d["factory"] == factory]))
    except Exception as exc:
        if (failure := call_failure(exc)) is None:
            raise
    fee = market_fees(sweeper.w3).max_fee_per_gas
    native = sweeper.chain.native_token()
    data = {
        "network": network.name,
        "deposits": deposits,
        "already_flushed": [d.short_id for d in plan.empty()],
        "gas_limit": gas,
        "max_cost": units_text(gas * fee, native.decimals),
        "estimation_failed": failure,
    }
    lines = [f"{d['short_id']} {d['address']}: {_amounts(network, d['held'])}" for d in deposits]
    cost = (
        f"gas estimation fails ({failure}): a sweep would hold the deposits that fail on their own"
        if failure
        else f"gas limit {gas}, at most {data['max_cost']} {native.symbol} at today's fees"
    )
    _print(
        args,
        data,
        (f"would sweep {len(deposits)} deposit(s) on {network.name}:\n  " + "\n  ".join(lines) + f"\n{cost}")
        if deposits
        else f"nothing to sweep on {network.name}",
    )


def _sweep_now(args, sweeper: NetworkSweeper, merchant_id, retried: list[uuid.UUID] | None = None) -> None:
    """Step until nothing is due (or in flight); a reverted batch goes on deposit by deposit,
    a deposit that fails on its own is held. Exit status 1 if anything failed or was held."""
    done: list[Sweep] = []
    network, deadline, started = sweeper.network, time.monotonic() + args.timeout, utcnow()
    poll, failed = min(1.0, max(0.2, network.block_time / 2)), False
    while True:
        step = sweeper.tick(force=True, merchant_id=merchant_id, only=retried)
        if step.outcome in (Outcome.CONFIRMED, Outcome.FAILED):
            assert step.sweep is not None  # the sweep that ended
            done.append(step.sweep)
        failed |= step.outcome == Outcome.FAILED
        if step.outcome in (Outcome.IDLE, Outcome.SKIPPED, Outcome.CAPPED):
            break
        if time.monotonic() > deadline:
            raise ValueError(
                f"sweeps still in flight on {network.name} after {args.timeout:g} s; "
                "the sweeper process (or kassa sweep again) follows them"
            )
        if not step.progressed:
            time.sleep(poll)
    native = sweeper.chain.native_token()
    holds = held.held_since(sweeper.sessions, network, started)
    data = {"network": network.name, "sweeps": [_summary(s) for s in done], "held": [held.as_dict(h) for h in holds]}
    lines = [
        f"{s.status.lower()}: {s.tx_hash}, {s.deposit_count} deposit(s), gas {s.gas_used}, cost "
        f"{units_text(int(s.cost_units or 0), native.decimals)} {native.symbol}"
        + (f" (${s.cost_usd})" if s.cost_usd is not None else "")
        + (f"; {s.error}" if s.error else "")
        for s in done
    ] + [f"held: {h.short_id} {h.address}: {h.reason}" for h in holds if h.status == "HELD"]
    _print(args, data, "\n".join(lines) if lines else f"nothing to sweep on {network.name}")
    if step.outcome in (Outcome.SKIPPED, Outcome.CAPPED):
        raise ValueError(step.note or "nothing could be sent")
    if failed or any(h.status == "HELD" for h in holds):
        raise ValueError("a sweep failed, or a deposit is held: kassa sweep --held shows why")


def _summary(s: Sweep) -> dict[str, Any]:
    return {
        "tx_hash": s.tx_hash,
        "status": s.status,
        "deposits": s.deposit_count,
        "gas_used": s.gas_used,
        "cost_units": str(s.cost_units) if s.cost_units is not None else None,
        "cost_usd": str(s.cost_usd) if s.cost_usd is not None else None,
        "error": s.error,
        "payments": [d["payment_id"] for d in s.deposits],
    }


def add_parser(sub) -> None:
    """Register ``kassa contracts deploy`` and ``kassa sweep`` on the top-level subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    contracts = sub.add_parser("contracts", help="the forwarder contracts").add_subparsers(dest="cmd", required=True)
    d = contracts.add_parser("deploy", parents=[common], help="deploy the forwarder factory (idempotent)")
    d.add_argument("--network", required=True)
    d.add_argument("--private-key", help="the key that pays the gas (default: SWEEPER_PRIVATE_KEY)")
    d.set_defaults(run=cmd_contracts_deploy)
    s = sub.add_parser("sweep", parents=[common], help="sweep forwarder deposits with confirmed funds now")
    s.add_argument("--network", help="the EVM network (required, but for --held)")
    s.add_argument("--email", help="only this merchant's deposits")
    s.add_argument("--dry-run", action="store_true", help="show what would be swept and what it would cost")
    s.add_argument("--held", action="store_true", help="list the held deposits, why, and the key's spending")
    s.add_argument(
        "--retry-held",
        action="append",
        metavar="PAYMENT",
        help="release a held deposit (payment id or short id) and sweep it now, on its own",
    )
    s.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the sweeps to confirm")
    s.set_defaults(run=cmd_sweep)
