"""An HTTP spot-price provider behind the ``RateProvider`` interface.

``HttpRates("https://api.coinbase.com/v2/prices/{symbol}-USD/spot", path="data.amount")``
asks the URL (``{symbol}`` replaced) for the USD price and reads the number at the dotted
``path`` of the JSON reply. Rates are cached for ``ttl`` seconds; when a refresh fails,
a cached rate younger than ``max_age`` is still served; otherwise ``RateUnavailable``.
Stablecoins are 1 USD without asking. Every request has a timeout.
"""
from __future__ import annotations

import threading
import time
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Callable

import requests

from kassa_common.chains.rates import STABLECOINS, FixedRates, RateProvider, RateUnavailable, parse_fixed_rates

if TYPE_CHECKING:
    from kassa_common.config import Settings


class HttpRates:
    live = True  # spot prices: fit for live payments

    def __init__(self, url_template: str, *, path: str = "data.amount", ttl: float = 60.0, max_age: float = 300.0,
                 timeout: float = 3.0, clock: Callable[[], float] = time.monotonic,
                 session: requests.Session | None = None) -> None:
        if "{symbol}" not in url_template:
            raise ValueError("the rate URL needs a {symbol} placeholder")
        if not 0 < ttl <= max_age:
            raise ValueError("need 0 < ttl <= max_age")
        self.url_template, self.path, self.ttl, self.max_age, self.timeout = url_template, path, ttl, max_age, timeout
        self.clock = clock
        self._session = session or requests.Session()
        self._cache: dict[str, tuple[Decimal, float]] = {}
        self._lock = threading.Lock()

    def usd_rate(self, symbol: str) -> Decimal:
        sym = symbol.strip().upper()
        if sym in STABLECOINS:
            return Decimal(1)
        now = self.clock()
        cached = self._cache.get(sym)
        if cached and now - cached[1] < self.ttl:
            return cached[0]
        with self._lock:  # one refresh at a time; others wait and reuse it
            cached = self._cache.get(sym)
            if cached and self.clock() - cached[1] < self.ttl:
                return cached[0]
            try:
                rate = self._fetch(sym)
            except RateUnavailable:
                if cached and self.clock() - cached[1] < self.max_age:
                    return cached[0]
                raise
            self._cache[sym] = (rate, self.clock())
            return rate

    def _fetch(self, symbol: str) -> Decimal:
        url = self.url_template.format(symbol=symbol)
        try:
            resp = self._session.get(url, timeout=self.timeout, allow_redirects=False)
            if resp.status_code != 200:
                raise RateUnavailable(f"{symbol}: rate source answered HTTP {resp.status_code}")
            value = resp.json()
            for part in self.path.split("."):
                value = value[part]
            rate = Decimal(str(value))
        except RateUnavailable:
            raise
        except (requests.RequestException, ValueError, KeyError, TypeError, IndexError, InvalidOperation) as exc:
            raise RateUnavailable(f"{symbol}: no rate from the rate source ({exc.__class__.__name__})") from None
        if not rate.is_finite() or rate <= 0:
            raise RateUnavailable(f"{symbol}: rate source gave a non-positive rate")
        return rate


def make_rates(settings: Settings) -> RateProvider:
    """The rate source the settings name (``kassa_common.config.Settings``): ``RATES_URL``'s
    HTTP spot prices, else the fixed ``FIXED_RATES``. Every process that prices uses this."""
    if settings.rates_url:
        return HttpRates(settings.rates_url, path=settings.rates_json_path)
    return FixedRates(parse_fixed_rates(settings.fixed_rates), live=settings.fixed_rates_allow_live)
