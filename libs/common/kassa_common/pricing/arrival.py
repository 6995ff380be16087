"""Funds that arrive after a payment's rate lock: valued at the rate of their arrival.

A payment's crypto amount holds until ``rate_locked_until``. A transfer first seen after
that is given the rate of that moment (one token in the payment's currency, the payment's
spread included) on its row (``Transfer.exchange_rate``); for the completion check its
units count as ``units × arrival rate / locked rate`` (what it is worth at arrival, in the
units the payment asked for), with the merchant's underpayment tolerance as for any
payment. The payment shows both rates: ``exchange_rate`` (locked) and
``arrival_exchange_rate`` (the latest arrival's). When no rate can be had at that moment
(every source down past the stale limit) the transfer keeps the locked rate and a warning
is logged: settlement never stops for a rate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from kassa_common.pricing.fixed import RateUnavailable
from kassa_common.pricing.service import RateService
from kassa_common.pricing.terms import stored, with_spread
from kassa_common.statuses import TransferStatus

log = logging.getLogger("kassa.rates")


def rate_at_arrival(rates: RateService | None, payment: Any, now: datetime) -> Decimal | None:
    """The rate for a transfer of ``payment`` arriving ``now``: None while the lock holds."""
    if payment.rate_locked_until is None or now <= payment.rate_locked_until:
        return None
    if rates is None:
        return None
    try:
        market = rates.quote(payment.token, payment.currency, live=not payment.test_mode).rate
    except RateUnavailable as exc:
        log.warning(
            "payment %s: funds arrived after the rate lock and no rate is available (%s); valued at the locked rate",
            payment.id,
            exc,
        )
        return None
    return stored(with_spread(market, payment.rate_spread_pct or Decimal(0)))


def valued_units(payment: Any, transfers: Iterable[Any]) -> int:
    """What the counted, confirmed transfers are worth in the payment's token units, each
    arriving after the lock at its own arrival rate."""
    total = Decimal(0)
    for t in transfers:
        if not (t.counted and t.status == TransferStatus.CONFIRMED):
            continue
        rate = getattr(t, "exchange_rate", None)
        units = Decimal(int(t.amount_units))
        total += units if rate is None else (units * rate / payment.exchange_rate).to_integral_value(ROUND_FLOOR)
    return int(total)


def latest_arrival_rate(transfers: Iterable[Any]) -> Decimal | None:
    """The rate of the latest transfer valued at its arrival (None: none arrived after the lock)."""
    rated = [t for t in transfers if t.counted and getattr(t, "exchange_rate", None) is not None]
    return max(rated, key=lambda t: t.created_at).exchange_rate if rated else None
