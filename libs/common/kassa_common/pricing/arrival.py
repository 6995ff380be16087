"""Funds valued at another rate than the locked one: those that arrive after the rate lock,
and those that confirm long after it.

A payment's crypto amount holds until ``rate_locked_until``. A transfer first seen after
that is given the rate of that moment (one token in the payment's currency, the payment's
spread included) on its row (``Transfer.exchange_rate``); for the completion check its
units count as ``units × that rate / locked rate`` (what it is worth, in the units the
payment asked for), with the merchant's underpayment tolerance as for any payment. The
payment shows both rates: ``exchange_rate`` (locked) and ``arrival_exchange_rate`` (the
latest transfer's own).

The rate a transfer was given when first seen (the locked one, or its arrival's) holds for
its confirmation only until ``hold_until``: the end of the lock (or its sighting, when it
came later) plus ``RATE_HOLD_GRACE_MINUTES``. A transaction that sits unconfirmed past that
(a Bitcoin transaction with a low fee can wait in the mempool for days) is valued at the
rate of its confirmation: waiting is no free option on the price (docs/pricing.md).

Rates come from the rate service's cache only (``RateService.cached_quote``): settlement
runs inside a transaction that holds payment rows and asks no source there; a rate missing
from the cache raises ``RateNotCached``, which the settler fetches outside the transaction
before it settles the batch again. When the sources are down past the stale limit the
transfer keeps the rate it has and a warning is logged: settlement never stops for a rate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Any

from kassa_common.pricing.fixed import RateUnavailable
from kassa_common.pricing.service import RATE_DIGITS, RateService
from kassa_common.pricing.terms import stored, with_spread
from kassa_common.statuses import TransferStatus

log = logging.getLogger("kassa.rates")


def rate_at_arrival(rates: RateService | None, payment: Any, now: datetime) -> Decimal | None:
    """The rate for a transfer of ``payment`` first seen ``now``: None while the lock holds."""
    if payment.rate_locked_until is None or now <= payment.rate_locked_until:
        return None
    return _market(rates, payment, "funds arrived after the rate lock")


def hold_until(rates: RateService, payment: Any, transfer: Any) -> datetime | None:
    """Until when a transfer may confirm at the rate it was given when first seen (None: no lock)."""
    if payment.rate_locked_until is None:
        return None
    return max(payment.rate_locked_until, transfer.created_at) + rates.hold_grace


def rate_at_confirmation(rates: RateService | None, payment: Any, transfer: Any, now: datetime) -> Decimal | None:
    """The rate for a transfer of ``payment`` confirmed ``now``: None while the rate it was
    given when first seen still holds (``hold_until``), else the market's now."""
    if rates is None:
        return None
    until = hold_until(rates, payment, transfer)
    if until is None or now <= until:
        return None
    return _market(rates, payment, f"funds first seen {transfer.created_at:%Y-%m-%d %H:%M} confirmed after {until}")


def _market(rates: RateService | None, payment: Any, why: str) -> Decimal | None:
    if rates is None:
        return None
    try:
        market = rates.cached_quote(payment.token, payment.currency, live=not payment.test_mode).rate
    except RateUnavailable as exc:
        log.warning("payment %s: %s and no rate is available (%s); valued at the rate it has", payment.id, why, exc)
        return None
    return stored(with_spread(market, payment.rate_spread_pct or Decimal(0)))


def valued_units(payment: Any, transfers: Iterable[Any]) -> int:
    """What the counted, confirmed transfers are worth in the payment's token units, each
    valued at its own rate when it has one."""
    total = 0
    for t in transfers:
        if not (t.counted and t.status == TransferStatus.CONFIRMED):
            continue
        rate = getattr(t, "exchange_rate", None)
        if rate is None:
            total += int(t.amount_units)
            continue
        with localcontext() as ctx:
            ctx.prec = 2 * RATE_DIGITS  # units (up to 78 digits) × a rate (up to 36): exact before the floor
            total += int((Decimal(int(t.amount_units)) * rate / payment.exchange_rate).to_integral_value(ROUND_FLOOR))
    return total


def latest_arrival_rate(transfers: Iterable[Any]) -> Decimal | None:
    """The rate of the latest transfer valued at its own rate (None: every one at the locked rate)."""
    rated = [t for t in transfers if t.counted and getattr(t, "exchange_rate", None) is not None]
    return max(rated, key=lambda t: t.created_at).exchange_rate if rated else None
