"""A merchant's pricing terms, and what they make of a quote.

``rate_spread_pct`` (0 to 10, in steps of 0.01) is added to what the customer pays: the
payment's ``exchange_rate`` is the market rate divided by (1 + spread), so ``amount`` still
equals ``crypto_amount × exchange_rate``. ``rate_lock_minutes`` (1 to 2880; none: the payment
lifetime) is how long the quoted crypto amount holds; funds arriving later are valued at
the rate of their arrival for the completion check (``payments.settle``). Per merchant, not
per mode, like the other merchant settings; the dashboard's settings page and
``kassa merchant settings`` both change them here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any, NamedTuple

from kassa_common.errors import AmountTooLarge, DomainError
from kassa_common.pricing import currencies
from kassa_common.pricing.amounts import crypto_amount, to_base_units
from kassa_common.pricing.service import RATE_DIGITS, RATE_PLACES

MAX_SPREAD = Decimal(10)
SPREAD_STEP = Decimal("0.01")
MIN_LOCK, MAX_LOCK = 1, 2880  # minutes
NOISE = Decimal("1e-24")  # token amounts are computed to this, then rounded up to the token's places


class TermsError(DomainError):
    code = "VALIDATION_ERROR"


class PricingTerms(NamedTuple):
    spread_pct: Decimal
    lock_minutes: int | None  # None: the payment lifetime

    @property
    def spread_text(self) -> str:
        return format(self.spread_pct.normalize(), "f")


def terms_of(merchant: Any) -> PricingTerms:
    return PricingTerms(merchant.rate_spread_pct or Decimal(0), merchant.rate_lock_minutes)


def set_terms(merchant: Any, *, spread: str | None = None, lock: str | None = None) -> None:
    """Change the terms given as text (None: keep); both are checked before either changes."""
    new_spread = merchant.rate_spread_pct if spread is None else parse_spread(spread)
    new_lock = merchant.rate_lock_minutes if lock is None else parse_lock(lock)
    merchant.rate_spread_pct, merchant.rate_lock_minutes = new_spread, new_lock


def parse_spread(text: str) -> Decimal:
    raw = text.strip().removesuffix("%").strip()
    try:
        pct = Decimal(raw) if len(raw) <= 20 else None  # nothing ("") is no number either
    except InvalidOperation:
        pct = None
    if pct is None or not pct.is_finite() or not 0 <= pct <= MAX_SPREAD or pct.quantize(SPREAD_STEP) != pct:
        raise TermsError(
            f"rate spread must be a percentage from 0 to {MAX_SPREAD} in steps of {SPREAD_STEP}; got {_shown(text)}",
            [{"field": "rate_spread_pct", "message": "0 to 10"}],
        )
    return pct.quantize(SPREAD_STEP)


def parse_lock(text: str) -> int | None:
    text = text.strip()
    if text.lower() in ("", "default"):
        return None
    if not re.fullmatch(r"[0-9]{1,6}", text) or not MIN_LOCK <= int(text) <= MAX_LOCK:
        raise TermsError(
            f"rate lock must be a whole number of minutes from {MIN_LOCK} to {MAX_LOCK}, or empty for "
            f"the payment lifetime; got {_shown(text)}",
            [{"field": "rate_lock_minutes", "message": f"{MIN_LOCK} to {MAX_LOCK}"}],
        )
    return int(text)


def _shown(text: str) -> str:
    return f'"{text.strip()[:40]}"' if text.strip() else "nothing"  # pragma: no mutate


# ---- a payment's price ----------------------------------------------------------------------


@dataclass(frozen=True)  # pragma: no mutate
class Priced:
    amount: Decimal  # in the currency, at its minor units
    units: int  # the crypto amount in the token's base units
    rate: Decimal  # one token in the currency, the spread included
    spread_pct: Decimal


def with_spread(market_rate: Decimal, spread_pct: Decimal) -> Decimal:
    """The rate the customer gets: the market rate less the spread (they pay the spread more)."""
    if not spread_pct:
        return market_rate
    with localcontext() as ctx:
        ctx.prec = RATE_DIGITS
        return market_rate / (1 + spread_pct / 100)


def stored(rate: Decimal) -> Decimal:
    """A rate as payments and transfers store it (18 places; up to 36 digits, past the default
    context's 28)."""
    with localcontext() as ctx:
        ctx.prec = RATE_DIGITS
        return rate.quantize(RATE_PLACES, ROUND_HALF_UP)


def price_amount(amount: Decimal, currency: str, market_rate: Decimal, decimals: int, spread_pct: Decimal) -> Priced:
    """An amount in the currency: the crypto amount to ask for (rounded up from the exact
    rate), spread included."""
    rate = with_spread(market_rate, spread_pct)
    with localcontext() as ctx:
        ctx.prec = RATE_DIGITS  # the last digits of a division are noise far below any token's smallest unit
        tokens = (amount / rate).quantize(NOISE, ROUND_HALF_EVEN)
    return Priced(
        amount, to_base_units(crypto_amount(tokens, Decimal(1), decimals), decimals), stored(rate), spread_pct
    )


def price_units(units_decimal: Decimal, currency: str, market_rate: Decimal, decimals: int) -> Priced:
    """A price in token units (a CRYPTO product): what it is worth in the currency; no spread.
    Worth more than a payment's ``amount`` holds (``currencies.MAX_AMOUNT``): ``AmountTooLarge``."""
    with localcontext() as ctx:
        ctx.prec = RATE_DIGITS
        worth = units_decimal * market_rate
        if worth > currencies.MAX_AMOUNT:
            raise AmountTooLarge(
                f"at today's rate this price is worth {worth:.4E} {currency}, more than the largest amount "
                f"a payment holds ({currencies.MAX_AMOUNT} {currency})",
                [{"field": "product_id", "message": "worth more than the largest amount a payment holds"}],
            )
        amount = currencies.rounded(worth, currency)
    return Priced(amount, to_base_units(units_decimal, decimals), stored(market_rate), Decimal(0))


def lock_until(now: datetime, lifetime_minutes: int, lock_minutes: int | None) -> datetime:
    return now + timedelta(minutes=min(lock_minutes or lifetime_minutes, lifetime_minutes))
