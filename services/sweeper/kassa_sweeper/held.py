"""``kassa sweep --held`` and ``--retry-held``: the held deposits, for the operator.

``--held`` lists every deposit the sweeper took out of its batches (``HELD``: waits for
the operator; ``SOLO``: swept on its own next), with the reason, what it held and since
when, and per sweepable network what the sweeper key spent in the last hour against
``SWEEP_MAX_SPEND_USD_PER_HOUR``. ``--retry-held PAYMENT`` releases a held deposit: it is
swept once more, on its own, and held again (with the new reason) if that fails too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kassa_common.accounts import merchants
from kassa_common.bootstrap import process_engine
from kassa_common.chains.networks import Network
from kassa_common.config import Settings, SweeperSettings
from kassa_common.db import make_session_factory, unit_of_work
from kassa_common.pricing.amounts import units_text
from kassa_common.pricing.service import make_rates
from kassa_common.sweeps import Held, holds
from kassa_common.timefmt import utcnow
from kassa_sweeper import budget, configured


def as_dict(h: Held) -> dict[str, Any]:
    return {
        "payment_id": str(h.payment_id),
        "short_id": h.short_id,
        "network": h.network,
        "address": h.address,
        "settlement_address": h.settlement,
        "status": h.status,
        "reason": h.reason,
        "held": h.held,
        "times_held": h.times_held,
        "since": h.since.isoformat(),
        "released_at": h.released_at.isoformat() if h.released_at else None,
        "sweep_id": str(h.sweep_id) if h.sweep_id else None,
    }


def release(sessions, network: Network, refs: list[str]) -> list[uuid.UUID]:
    """Release the held deposits of payments ``refs`` on ``network``: their ids."""
    with unit_of_work(sessions) as s:
        return [holds.release(s, ref, network=network.name, now=utcnow())[0].payment_id for ref in refs]


def held_since(sessions, network: Network, since: datetime) -> list[Held]:
    """The deposits held (or made solo) on ``network`` from ``since`` on."""
    with sessions() as s:
        return holds.listing(s, network=network.name, since=since)


def show(args, settings: Settings, options: SweeperSettings, emit: Callable[..., None]) -> None:
    network = settings.networks.get(args.network) if args.network else None
    if args.network and network is None:
        raise ValueError(f"{args.network} is not a network of this server (GET /v1/api/networks lists them)")
    engine = process_engine(settings, "cli", pool_size=1)
    try:
        sessions = make_session_factory(engine)
        with sessions() as s:
            merchant_id = merchants.merchant_by_email(s, args.email).id if args.email else None
            found = holds.listing(s, network=network.name if network else None, merchant_id=merchant_id)
            spending = _spending(
                s, settings, options, [network] if network else configured.sweepable(options, settings)
            )
    finally:
        engine.dispose()
    data = {"held": [as_dict(h) for h in found], "spending": spending}
    lines = [
        f"{h.status.lower():5} {h.network} {h.short_id} {h.address} since {h.since:%Y-%m-%d %H:%M} UTC"
        + (f", held {h.times_held} times" if h.times_held > 1 else "")
        + (f"\n      holds {_amounts(settings, h)}" if h.held else "")
        + f"\n      {h.reason}"
        for h in found
    ] or ["no held deposits"]
    lines += [
        f"{x['network']}: the sweeper key spent {x['spent']} {x['symbol']} in the last hour, of "
        f"{x['cap'] or '?'} {x['symbol']} (SWEEP_MAX_SPEND_USD_PER_HOUR={x['cap_usd']})"
        + (": capped, sweeps wait" if x["capped"] else "")
        for x in spending
    ]
    emit(args, data, "\n".join(lines))


def _amounts(settings: Settings, h: Held) -> str:
    network = settings.networks.get(h.network)
    out = []
    for symbol, units in h.held.items():
        token = network.token(symbol) if network else None
        out.append(f"{units_text(int(units), token.decimals)} {symbol}" if token else f"{units} {symbol} (base units)")
    return ", ".join(out)


def _spending(s, settings: Settings, options: SweeperSettings, networks: list[Network]) -> list[dict[str, Any]]:
    signer = configured.signer(options)
    if signer is None:
        return []
    rates, out = make_rates(settings), []
    for network in networks:
        native = next((t for t in network.tokens if t.native), None)
        if native is None or network.kind != "evm":
            continue
        spent = budget.spending(
            s, network, native.symbol, signer.address, options.max_spend_usd_per_hour, rates, utcnow()
        )
        out.append(
            {
                "network": network.name,
                "symbol": native.symbol,
                "spent": units_text(spent.spent_units, native.decimals),
                "cap": units_text(spent.cap_units, native.decimals) if spent.cap_units is not None else None,
                "cap_usd": str(spent.cap_usd),
                "capped": not spent.allows(0),
            }
        )
    return out
