"""Fixed rates from the settings: the development default, and how test mode is priced.

``FIXED_RATES`` lists USD prices, of coins and of fiat currencies alike
(``ETH=3000,EUR=1.08``: one euro is 1.08 USD); a cross such as ETH in EUR goes through
USD. USDC and USDT are always 1 USD. A fixed rate drifts from the market, so it prices
live payments only when the operator says so (``FIXED_RATES_ALLOW_LIVE``, the development
stack).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Protocol

DEFAULT_FIXED_RATES = (
    "ETH=3000,BTC=60000,LTC=80,POL=0.50,BNB=600,EUR=1.08,GBP=1.27,CHF=1.13,CAD=0.73,AUD=0.66,JPY=0.0067"
)
STABLECOINS = ("USDC", "USDT")  # pegged to USD


class RateUnavailable(Exception):
    """No rate is known for the requested symbol right now."""


class RateProvider(Protocol):
    """What prices in USD for live use (the sweeper): ``FixedRates`` and ``service.RateService``."""

    @property
    def live(self) -> bool:
        """Whether its rates may price live payments (real money)."""
        ...

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
    """Static USD prices; USDC and USDT are always 1 USD, USD is 1."""

    def __init__(self, rates: Mapping[str, Decimal], *, live: bool = False):
        self.live = live
        self._rates = {sym.strip().upper(): _positive(val, sym) for sym, val in rates.items()}
        self._rates.update({sym: Decimal(1) for sym in (*STABLECOINS, "USD")})

    def usd_rate(self, symbol: str) -> Decimal:
        try:
            return self._rates[symbol.strip().upper()]
        except KeyError:
            raise RateUnavailable(f"no fixed USD rate for {symbol!r}") from None

    def knows(self, symbol: str) -> bool:
        return symbol.strip().upper() in self._rates


def parse_fixed_rates(text: str) -> dict[str, Decimal]:
    """Parse ``"ETH=3000,EUR=1.08"`` into ``{"ETH": Decimal("3000"), ...}``.

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
