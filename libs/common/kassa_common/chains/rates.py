"""USD exchange rates and exact amount arithmetic for crypto payments."""
from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext
from typing import Protocol

DEFAULT_FIXED_RATES = "ETH=3000,BTC=60000,POL=0.50,BNB=600"
STABLECOINS = ("USDC", "USDT")
MAX_PLACES = 8  # quoted amounts never carry more than 8 decimal places


class RateUnavailable(Exception):
    """No USD rate is known for the requested symbol right now."""


class RateProvider(Protocol):
    live: bool  # whether its rates may price live payments (real money)

    def usd_rate(self, symbol: str) -> Decimal:
        """USD price of one unit of ``symbol``; raises RateUnavailable."""
        ...


def _positive(value: object, what: str) -> Decimal:
    try:
        rate = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{what}: {value!r} is not a number") from None
    if not rate.is_finite() or rate <= 0:
        raise ValueError(f"{what}: rate must be a positive number, got {value!r}")
    return rate


class FixedRates:
    """Static rates (test mode, offline); USDC and USDT are always 1 USD.

    A fixed rate drifts from the market, so it prices live payments only when told to
    (``live=True``: the development stack's ``FIXED_RATES_ALLOW_LIVE``).
    """

    def __init__(self, rates: Mapping[str, Decimal], *, live: bool = False):
        self.live = live
        self._rates = {sym.strip().upper(): _positive(val, sym) for sym, val in rates.items()}
        self._rates.update({sym: Decimal(1) for sym in STABLECOINS})

    def usd_rate(self, symbol: str) -> Decimal:
        try:
            return self._rates[symbol.strip().upper()]
        except KeyError:
            raise RateUnavailable(f"no fixed USD rate for {symbol!r}") from None


def parse_fixed_rates(text: str) -> dict[str, Decimal]:
    """Parse ``"ETH=3000,BTC=60000"`` into ``{"ETH": Decimal("3000"), ...}``.

    Symbols are upper-cased; blank text gives an empty dict. Raises ValueError
    on malformed entries, duplicates and non-positive rates.
    """
    rates: dict[str, Decimal] = {}
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        symbol, sep, value = entry.partition("=")
        symbol = symbol.strip().upper()
        if not sep or not symbol or not symbol.isalnum():
            raise ValueError(f"bad rate entry {entry.strip()!r}; expected SYMBOL=PRICE")
        if symbol in rates:
            raise ValueError(f"duplicate rate for {symbol}")
        rates[symbol] = _positive(value, symbol)
    return rates


def crypto_amount(usd: Decimal, rate: Decimal, decimals: int) -> Decimal:
    """``usd / rate`` rounded up to ``min(decimals, 8)`` places.

    Rounding up means a customer never underpays because of rounding.
    """
    if not usd.is_finite() or usd < 0:
        raise ValueError(f"USD amount must be a non-negative number, got {usd!r}")
    if not rate.is_finite() or rate <= 0:
        raise ValueError(f"rate must be a positive number, got {rate!r}")
    if decimals < 0:
        raise ValueError("decimals must not be negative")
    quantum = Decimal(1).scaleb(-min(decimals, MAX_PLACES))
    with localcontext() as ctx:
        # Rounding the quotient up as well keeps the final ceiling exact.
        ctx.prec = 60
        ctx.rounding = ROUND_CEILING
        return (usd / rate).quantize(quantum)


def to_base_units(amount: Decimal, decimals: int) -> int:
    """Exact integer amount in the token's smallest unit (wei, satoshi, ...).

    Raises ValueError if ``amount`` has more places than the token allows.
    """
    if not amount.is_finite():
        raise ValueError(f"amount must be finite, got {amount!r}")
    sign, digits, exponent = amount.as_tuple()
    assert isinstance(exponent, int)  # a finite amount's
    coefficient = int("".join(map(str, digits)) or "0")
    shift = exponent + decimals
    units: int
    if shift >= 0:
        units = coefficient * 10**shift
    else:
        units, rest = divmod(coefficient, 10**-shift)
        if rest:
            raise ValueError(f"{amount} has more than {decimals} decimal places")
    return -units if sign else units


def from_base_units(units: int, decimals: int) -> Decimal:
    """Exact Decimal for ``units`` smallest units, with exactly ``decimals`` places."""
    if decimals < 0:
        raise ValueError("decimals must not be negative")
    return Decimal((1 if units < 0 else 0, tuple(int(d) for d in str(abs(units))), -decimals))


def plain(value: Decimal) -> str:
    """A decimal as the API shows it: no exponent, no trailing zeros beyond the point."""
    return format(value.normalize(), "f")


def units_text(units: int | Decimal, decimals: int) -> str:
    """Base units as a plain decimal amount of the token ("12.5" for 12500000 at 6 decimals)."""
    return plain(from_base_units(int(units), decimals))
