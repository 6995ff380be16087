"""The sweeper key's spending cap: ``SWEEP_MAX_SPEND_USD_PER_HOUR`` per network.

What the key spent on a network in the last hour is the sum, over the sweeps it sent
there in that hour, of what each cost (gas used times its price, once mined: a sweep
that reverted cost gas too) or, for one still in flight, of the most it may cost (gas
limit times its highest max fee). A sweep is sent only when that sum plus the most the
new sweep may cost stays within the cap, converted to the native coin at the current
rate; a batch that does not fit is halved until it does, and a single deposit that does
not fit waits until the hour's older sweeps age out. Without a rate for the native coin
the cap cannot be checked, so nothing is sent (failing closed: a sweep can wait, the gas
money cannot come back).

USD rather than the native coin, so that one setting means the same on every network
(ETH, POL, BNB…) and reads beside ``SWEEP_MIN_USD``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_FLOOR, Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.networks import Network
from kassa_common.models import Sweep
from kassa_common.pricing.fixed import RateProvider, RateUnavailable
from kassa_common.statuses import SweepStatus

WINDOW = timedelta(hours=1)
IN_FLIGHT = (SweepStatus.PENDING, SweepStatus.MINED)


@dataclass(frozen=True)
class Spending:
    """A network's last hour for one key: spent and cap in the native coin's base units
    (``cap_units`` None: no rate, so no sweep), and the cap in USD."""

    network: str
    spent_units: int
    cap_units: int | None
    cap_usd: Decimal
    oldest: datetime | None  # the oldest sweep of the window: the cap frees up an hour after it

    def allows(self, max_cost_units: int) -> bool:
        return self.cap_units is not None and self.spent_units + max_cost_units <= self.cap_units


def spent_units(session: Session, network: str, sender: str, now: datetime) -> tuple[int, datetime | None]:
    """What ``sender`` spent (or may still spend) on ``network`` in the last hour; the oldest
    sweep counted."""
    rows = session.execute(
        sa.select(Sweep.status, Sweep.cost_units, Sweep.gas_limit, Sweep.attempts, Sweep.created_at).where(
            Sweep.network == network, Sweep.sender == sender, Sweep.created_at > now - WINDOW
        )
    )
    total, oldest = 0, None
    for status, cost, gas_limit, attempts, created_at in rows:
        if cost is not None:
            total += int(cost)
        elif status in IN_FLIGHT:
            total += int(gas_limit) * max((int(a["max_fee_per_gas"]) for a in attempts), default=0)
        oldest = created_at if oldest is None else min(oldest, created_at)
    return total, oldest


def spending(
    session: Session, network: Network, native: str, sender: str, cap_usd: Decimal, rates: RateProvider, now: datetime
) -> Spending:
    spent, oldest = spent_units(session, network.name, sender, now)
    token = network.token(native)
    try:
        rate = rates.usd_rate(native)
    except RateUnavailable:
        rate = None
    cap = None
    if rate and token is not None:
        cap = int((cap_usd / rate * 10**token.decimals).to_integral_value(ROUND_FLOOR))
    return Spending(network.name, spent, cap, cap_usd, oldest)
