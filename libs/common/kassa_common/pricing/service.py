"""The rate service: one interface to every price Kassa needs.

``quote(symbol, currency, live=...)`` is the price of one ``symbol`` (a token) in
``currency`` (a fiat currency) and a note of where it came from (``Quote.source``, shown on
the payment as ``rate_source``). Where prices come from:

- test-mode payments (``live=False``) and, with ``FIXED_RATES_ALLOW_LIVE`` (the development
  stack), live ones too: the fixed rates (``fixed.FixedRates``);
- live payments otherwise: the market sources of ``RATES_PROVIDERS`` (``coinbase``,
  ``kraken``, ``coingecko``, and ``url`` when ``RATES_URL`` is set), asked in parallel, each
  within ``RATES_TIMEOUT_SECONDS``. Each symbol's USD price is the median of the sources that
  agree (``combine``); a cross (ETH in EUR) is the coin's USD price over the currency's.

A combined price is kept ``RATES_CACHE_SECONDS``. When a refresh finds too few sources (or
too few that agree) the last price is served until it is ``RATES_STALE_SECONDS`` old, and
it is cached again like a fresh one: the sources are asked once per cache period, not on
every quote. Past the stale limit the failure itself is remembered for the cache period:
``RatesDown`` (the API's 503 with ``Retry-After``) without asking again. One refresh per
symbol at a time and no lock held across a network call: a quote that finds the symbol
being refreshed by another takes the stale price at once, or waits for that refresh only
when there is nothing to serve. ``cached_quote`` never asks a source (the settler's
transaction uses it; ``RateNotCached.prepare`` fetches outside). Stablecoins (USDC, USDT)
count as 1 USD while their market price stays within ``STABLECOIN_PEG_TOLERANCE_PCT`` of
it; beyond that they are priced at market and ``depegs()`` names them (the merchant's
overview shows it). With no market source configured, live stablecoin payments in USD are
taken at par and every other live price is refused. Rates are computed with
``RATE_DIGITS`` significant digits and refused (``RateUnavailable``) when they do not fit
the payments' ``exchange_rate`` column.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal, localcontext

from kassa_common.errors import Unprepared
from kassa_common.pricing import metrics
from kassa_common.pricing.coinbase import Coinbase
from kassa_common.pricing.coingecko import CoinGecko
from kassa_common.pricing.combine import NoConsensus, combine
from kassa_common.pricing.custom import UrlTemplate
from kassa_common.pricing.fixed import STABLECOINS, FixedRates, RateUnavailable, parse_fixed_rates
from kassa_common.pricing.kraken import Kraken
from kassa_common.pricing.source import Source, SourceDown

log = logging.getLogger("kassa.rates")
PROVIDERS = ("coinbase", "kraken", "coingecko")
RATE_PLACES = Decimal("1e-18")  # as payments store it
MAX_RATE = Decimal("1e18")  # payments.exchange_rate is NUMERIC(36, 18): 18 digits before the point
RATE_DIGITS = 60  # pragma: no mutate (significant digits on rates: 18 places of a rate up to MAX_RATE, and more)


class RatesDown(RateUnavailable):
    """No trustworthy price right now; ``retry_after``: seconds worth waiting before asking again."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LiveRatesNeeded(RatesDown):
    """A live price was asked of a server that has fixed rates only."""


class Unpriced(RateUnavailable):
    """The sources answered, and none of them prices this symbol (an unsupported currency)."""


class RateNotCached(Unprepared):
    """``cached_quote`` found no answer young enough in the cache (neither a price nor a
    remembered failure). ``prepare()`` asks the sources, outside any transaction; the caller
    then tries again and finds the price, or the failure (``RatesDown``)."""

    def __init__(self, rates: RateService, symbol: str, currency: str, live: bool) -> None:
        super().__init__(f"no {symbol}/{currency} rate in the cache")
        self.rates, self.symbol, self.currency, self.live = rates, symbol, currency, live

    def prepare(self) -> None:
        try:
            self.rates.quote(self.symbol, self.currency, live=self.live)
        except RateUnavailable:
            pass  # remembered for the cache period: the next cached_quote raises it


@dataclass(frozen=True)  # pragma: no mutate
class Quote:
    rate: Decimal  # price of one token in the currency
    source: str  # where it came from, for people


@dataclass(frozen=True)  # pragma: no mutate
class Peg:
    symbol: str
    price: Decimal  # market price in USD
    depegged: bool


@dataclass(frozen=True)  # pragma: no mutate
class _Price:
    usd: Decimal
    source: str
    at: float  # when the sources gave it
    checked: float  # when they were last asked (later than ``at``: a stale price kept after a failed refresh)


@dataclass(frozen=True)  # pragma: no mutate
class _Down:
    """A refresh that found no price to serve, remembered for the cache period."""

    at: float
    message: str
    unpriced: bool  # the sources answered and none prices the symbol (else too few answered or agreed)


class RateService:
    def __init__(
        self,
        fixed: FixedRates,
        sources: Sequence[Source] = (),
        *,
        fixed_live: bool = False,
        min_sources: int = 2,
        max_deviation_pct: Decimal = Decimal(1),
        cache_seconds: float = 30.0,
        stale_seconds: float = 300.0,
        timeout: float = 3.0,
        peg_tolerance_pct: Decimal = Decimal(1),
        hold_grace_minutes: int = 60,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fixed, self.sources, self.fixed_live = fixed, list(sources), fixed_live
        self.min_sources = min_sources
        self.max_deviation_pct, self.peg_tolerance_pct = Decimal(max_deviation_pct), Decimal(peg_tolerance_pct)
        self.cache_seconds, self.stale_seconds, self.timeout, self.clock = cache_seconds, stale_seconds, timeout, clock
        self.retry_after = max(1, min(60, math.ceil(cache_seconds)))
        # how long after a payment's rate lock (or a later arrival) funds seen by then may still
        # confirm at the rate they were given (``arrival.rate_at_confirmation``)
        self.hold_grace = timedelta(minutes=hold_grace_minutes)
        self._cache: dict[str, _Price] = {}
        self._down: dict[str, _Down] = {}
        self._pegs: dict[str, Peg] = {}
        # Held only to read and change the flights, never across a network call.
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Event] = {}  # symbols being refreshed now, set when done
        self._pool = ThreadPoolExecutor(max_workers=max(1, 2 * len(self.sources)), thread_name_prefix="rates")

    @property
    def live(self) -> bool:
        """Whether live coin payments can be priced at all (market sources, or fixed rates allowed)."""
        return bool(self.sources) or self.fixed_live

    # ---- the interface ----------------------------------------------------------------------

    def quote(self, symbol: str, currency: str = "USD", *, live: bool = True) -> Quote:
        symbol, currency = symbol.strip().upper(), currency.strip().upper()
        if not live or self.fixed_live:
            return self._fixed(symbol, currency)
        if not self.sources:
            if symbol in STABLECOINS and currency == "USD":
                return Quote(Decimal(1), "par (no market source configured)")
            raise LiveRatesNeeded(
                f"live {symbol} payments in {currency} need a market rate and this server has "
                f"fixed rates only: the operator sets RATES_PROVIDERS "
                f"(FIXED_RATES_ALLOW_LIVE=true is for development)",
                self.retry_after,
            )
        return self._compose(symbol, currency, self._usd_prices({symbol, currency} - {"USD"}))

    def cached_quote(self, symbol: str, currency: str = "USD", *, live: bool = True) -> Quote:
        """``quote`` from what is known now, never asking a source: a price or a failure the
        cache still holds, else ``RateNotCached`` (whose ``prepare()`` asks, outside the
        caller's transaction)."""
        symbol, currency = symbol.strip().upper(), currency.strip().upper()
        if not live or self.fixed_live or not self.sources:
            return self.quote(symbol, currency, live=live)  # fixed rates or par: nothing to ask
        found, missing, _ = self._lookup({symbol, currency} - {"USD"})
        if missing:
            raise RateNotCached(self, symbol, currency, live)
        return self._compose(symbol, currency, found)

    def usd_rate(self, symbol: str) -> Decimal:
        """USD price of one ``symbol`` for live use (the sweeper's thresholds and budget): the
        market's, or with no market source configured the fixed rates, as it always had."""
        if not self.sources:
            return self.fixed.usd_rate(symbol.strip().upper())
        return self.quote(symbol, "USD", live=True).rate

    def depegs(self) -> list[Peg]:
        """Stablecoins the market prices outside the tolerance now (none without market sources)."""
        if self.fixed_live or not self.sources:
            return []
        for symbol in STABLECOINS:
            try:
                self._pegged(symbol, self._usd_prices({symbol})[symbol])
            except RateUnavailable:
                pass
        return [p for p in self._pegs.values() if p.depegged]

    # ---- fixed ------------------------------------------------------------------------------

    def _fixed(self, symbol: str, currency: str) -> Quote:
        if not self.fixed.knows(currency):
            raise Unpriced(f"FIXED_RATES has no rate for {currency}")
        return Quote(_rate(self.fixed.usd_rate(symbol), self.fixed.usd_rate(currency)), "fixed")

    # ---- market -----------------------------------------------------------------------------

    def _compose(self, symbol: str, currency: str, prices: dict[str, _Price]) -> Quote:
        coin = self._pegged(symbol, prices[symbol]) if symbol in STABLECOINS else prices[symbol]
        if currency == "USD":
            return Quote(_rate(coin.usd, Decimal(1)), f"{symbol}/USD {coin.source}")
        fiat = prices[currency]
        return Quote(_rate(coin.usd, fiat.usd), f"{symbol}/USD {coin.source}; {currency}/USD {fiat.source}")

    def _pegged(self, symbol: str, price: _Price) -> _Price:
        off = abs(price.usd - 1) * 100
        peg = Peg(symbol, price.usd, off > self.peg_tolerance_pct)
        if self._pegs.get(symbol) != peg:  # pragma: no mutate
            (log.warning if peg.depegged else log.info)(
                "%s at %s USD: %s", symbol, price.usd, "depegged, priced at market" if peg.depegged else "at par"
            )
        self._pegs[symbol] = peg
        metrics.STABLECOIN.labels(symbol).set(float(price.usd))
        if peg.depegged:
            return replace(price, source=f"at market, depegged ({price.source})")
        return replace(price, usd=Decimal(1), source=f"at par (market {price.usd}: {price.source})")

    def _usd_prices(self, symbols: set[str]) -> dict[str, _Price]:
        """USD prices of ``symbols``: the cache's, else one refresh per symbol at a time. A
        symbol another quote is refreshing is served stale at once when there is a stale price,
        else after that refresh (whose outcome, price or failure, the cache then holds)."""
        found, missing, stale = self._lookup(symbols)
        if not missing:
            return found
        with self._lock:
            theirs = {s: self._flights[s] for s in missing if s in self._flights}
            mine = missing - set(theirs)
            for s in mine:
                self._flights[s] = threading.Event()
        try:
            if mine:
                found.update(self._refresh(mine))
        finally:
            with self._lock:
                for s in mine:
                    self._flights.pop(s).set()
        for symbol, flight in sorted(theirs.items()):
            if symbol in stale:
                found[symbol] = stale[symbol]
                continue
            flight.wait(self.timeout + 1)
            done, still_missing, _ = self._lookup({symbol})
            if still_missing:
                metrics.UNAVAILABLE.inc()
                raise RatesDown(f"no {symbol}/USD rate yet (the rate sources are being asked); retry shortly", 1)
            found.update(done)
        return found

    def _lookup(self, symbols: set[str]) -> tuple[dict[str, _Price], set[str], dict[str, _Price]]:
        """From the cache alone: ``(found, missing, stale)``. ``found``: prices checked with the
        sources within the cache period (a stale one among them says how old it is);
        ``missing``: the symbols to refresh; ``stale``: the servable old prices of those.
        A failure remembered for one of ``symbols`` is raised."""
        now = self.clock()
        found: dict[str, _Price] = {}
        missing: set[str] = set()
        stale: dict[str, _Price] = {}
        for symbol in sorted(symbols):
            price = self._cache.get(symbol)
            servable = price is not None and now - price.at < self.stale_seconds
            if price is not None and servable and now - price.checked < self.cache_seconds:
                found[symbol] = self._aged(price, now)
                continue
            down = self._down.get(symbol)
            if down is not None and now - down.at < self.cache_seconds:
                metrics.UNAVAILABLE.inc()
                raise Unpriced(down.message) if down.unpriced else RatesDown(down.message, self.retry_after)
            missing.add(symbol)
            if price is not None and servable:
                stale[symbol] = self._aged(price, now)
        return found, missing, stale

    def _aged(self, price: _Price, now: float) -> _Price:
        """The price as served: one older than the cache period (a stale one) says how old."""
        if now - price.at < self.cache_seconds:
            return price
        metrics.STALE.inc()
        return replace(price, source=f"{price.source}, {now - price.at:.0f} s old")

    def _refresh(self, symbols: set[str]) -> dict[str, _Price]:
        """Ask the sources for ``symbols`` and cache what comes of it: the new price; the last
        one (within the stale limit) checked again; or the failure. Raises the first failure."""
        answers = self._ask(symbols)
        now = self.clock()
        out: dict[str, _Price] = {}
        failed: list[RateUnavailable] = []
        for symbol in sorted(symbols):
            by_source = {name: prices[symbol] for name, prices in answers.items() if symbol in prices}
            if not by_source and len(answers) >= self.min_sources:
                self._down[symbol] = _Down(now, f"none of the rate sources prices {symbol}", unpriced=True)
                failed.append(Unpriced(self._down[symbol].message))
                continue
            try:
                combined = combine(by_source, min_sources=self.min_sources, max_deviation_pct=self.max_deviation_pct)
            except NoConsensus as exc:
                try:
                    out[symbol] = self._stale(symbol, str(exc), now)
                except RatesDown as down:
                    failed.append(down)
                continue
            for name, pct in combined.deviation_pct.items():
                metrics.DEVIATION.labels(name, symbol).set(float(pct))
            for name in combined.excluded:
                metrics.EXCLUDED.labels(name).inc()
                log.warning(
                    "rate source %s excluded for %s: %s, %.2f%% from the median, does not agree with the others",
                    name,
                    symbol,
                    by_source[name],
                    combined.deviation_pct[name],
                )
            self._down.pop(symbol, None)
            out[symbol] = self._cache[symbol] = _Price(combined.price, combined.describe(), now, now)
        if failed:
            raise failed[0]
        return out

    def _stale(self, symbol: str, why: str, now: float) -> _Price:
        """No fresh price: the last one, cached again for the cache period, while it is within the
        stale limit; else the failure, remembered for the cache period."""
        cached = self._cache.get(symbol)
        if cached is not None and (age := now - cached.at) < self.stale_seconds:
            log.warning("no fresh %s/USD rate (%s); serving the one from %.0f s ago", symbol, why, age)
            self._cache[symbol] = replace(cached, checked=now)
            return self._aged(self._cache[symbol], now)
        metrics.UNAVAILABLE.inc()
        log.error("no %s/USD rate: %s", symbol, why)
        message = f"no trustworthy {symbol}/USD rate right now ({why}); retry shortly"
        self._down[symbol] = _Down(now, message, unpriced=False)
        raise RatesDown(message, self.retry_after)

    def _ask(self, symbols: set[str]) -> dict[str, dict[str, Decimal]]:
        """Every source's answer for ``symbols``, asked in parallel; those that fail or run out
        of time are left out (and counted)."""
        futures = {self._pool.submit(source.prices, set(symbols)): source.name for source in self.sources}
        done, _ = wait(futures, timeout=self.timeout + 0.5)
        answers: dict[str, dict[str, Decimal]] = {}
        for future, name in futures.items():
            if future not in done:
                metrics.ERRORS.labels(name).inc()
                log.warning("rate source %s: no answer within %.1f s", name, self.timeout)
                continue
            try:
                answers[name] = future.result()
                metrics.ANSWERS.labels(name).inc()
            except SourceDown as exc:
                metrics.ERRORS.labels(name).inc()
                log.warning("rate source down: %s", exc)
            except Exception:  # a source's bug must not take pricing down with it
                metrics.ERRORS.labels(name).inc()
                log.exception("rate source %s failed", name)
        return answers


def _rate(price: Decimal, per: Decimal) -> Decimal:
    """``price / per`` to ``RATE_DIGITS`` significant digits: amounts are computed from it, and
    it is rounded to ``RATE_PLACES`` only where it is stored (``terms.stored``). A rate that
    would not fit the payments' column, or rounds to nothing there, is no rate."""
    with localcontext() as ctx:
        ctx.prec = RATE_DIGITS
        rate = price / per
        if rate >= MAX_RATE:
            raise RateUnavailable(f"the rate ({rate:.6E}) is too large to store: at most {MAX_RATE:.0E}")
        if rate.quantize(RATE_PLACES) <= 0:
            raise RateUnavailable("the rate is too small to store")
    return rate


def make_sources(settings) -> list[Source]:
    """The market sources the settings name (``RATES_PROVIDERS``, then ``RATES_URL``)."""
    kw = {"timeout": settings.rates.timeout_seconds}
    built: dict[str, Callable[[], Source]] = {
        "coinbase": lambda: Coinbase(settings.rates.coinbase_url, **kw),
        "kraken": lambda: Kraken(settings.rates.kraken_url, **kw),
        "coingecko": lambda: CoinGecko(settings.rates.coingecko_url, api_key=settings.rates.coingecko_api_key, **kw),
    }
    sources = [built[name]() for name in settings.rates.providers]
    if settings.rates.url:
        sources.append(UrlTemplate(settings.rates.url, path=settings.rates.json_path, **kw))
    return sources


def make_rates(settings) -> RateService:
    """The rate service the settings describe (``kassa_common.config.Settings``); every
    process that prices uses this."""
    return RateService(
        FixedRates(parse_fixed_rates(settings.rates.fixed_rates)),
        make_sources(settings),
        fixed_live=settings.rates.fixed_rates_allow_live,
        min_sources=settings.rates.min_sources,
        max_deviation_pct=settings.rates.max_deviation_pct,
        cache_seconds=settings.rates.cache_seconds,
        stale_seconds=settings.rates.stale_seconds,
        timeout=settings.rates.timeout_seconds,
        peg_tolerance_pct=settings.rates.stablecoin_peg_tolerance_pct,
        hold_grace_minutes=settings.rates.hold_grace_minutes,
    )
