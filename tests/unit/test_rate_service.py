"""The rate service (``pricing.service.RateService``) with market sources doubled in memory
and a clock the test moves: where a quote comes from (fixed rates, par, the median of the
sources, a cross through USD), how long a price is kept, a stale price served and cached
again while the sources are down, a failure remembered for the cache period, the settler's
cache-only quote, stablecoins at par or depegged, and the rates refused as unstorable."""

from __future__ import annotations

import threading
import time
from decimal import Decimal as D

import pytest

from kassa_common.config import Settings
from kassa_common.pricing.fixed import FixedRates, RateUnavailable, parse_fixed_rates
from kassa_common.pricing.service import (
    LiveRatesNeeded,
    RateNotCached,
    RatesDown,
    RateService,
    Unpriced,
    _rate,
    make_rates,
    make_sources,
)
from kassa_common.pricing.source import SourceDown

pytestmark = pytest.mark.unit

FIXED = FixedRates(parse_fixed_rates("ETH=3000,BTC=60000,EUR=1.5"))


class Market:
    """A source answering ``prices`` from its dict; ``down``: it raises instead."""

    def __init__(self, name, prices, *, down=None):
        self.name, self.answers, self.down, self.asked = name, dict(prices), down, 0

    def prices(self, symbols):
        self.asked += 1
        if self.down is not None:
            raise self.down
        return {s: p for s, p in self.answers.items() if s in symbols}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def service(*sources, clock=None, **kw):
    return RateService(FIXED, sources, clock=clock or Clock(), **kw)


def two(eth=D(3000), eth2=D(3010), **more):
    return Market("a", {"ETH": eth, "EUR": D("1.5"), **more}), Market("b", {"ETH": eth2, "EUR": D("1.5"), **more})


def test_test_mode_and_the_development_stack_are_priced_by_the_fixed_rates():
    rates = service(*two())
    assert rates.quote(" eth ", "eur", live=False).rate == D(2000) and rates.quote("ETH", live=False).source == "fixed"
    assert service(*two(), fixed_live=True).quote("ETH", "EUR").rate == D(2000)
    with pytest.raises(Unpriced, match="CHF"):
        rates.quote("ETH", "CHF", live=False)


def test_without_a_market_source_live_stablecoins_in_usd_are_at_par_and_everything_else_refused():
    rates = service(cache_seconds=30)
    assert rates.quote("usdc").rate == D(1) and not rates.live and service(fixed_live=True).live
    with pytest.raises(LiveRatesNeeded) as refused:
        rates.quote("USDC", "EUR")
    assert refused.value.retry_after == 30
    with pytest.raises(LiveRatesNeeded):
        rates.quote("ETH")
    assert rates.usd_rate("eth") == D(3000) and rates.depegs() == []


def test_a_market_price_is_the_median_of_the_sources_and_a_cross_goes_through_usd():
    rates = service(*two())
    q = rates.quote("ETH", "USD")
    assert q.rate == D(3005) and q.source == "ETH/USD median of a, b"
    q = rates.quote("ETH", "EUR")
    assert (
        str(q.rate).startswith("2003.333333333333333333333333333333")
        and q.source == "ETH/USD median of a, b; EUR/USD median of a, b"
    )
    assert rates.usd_rate("ETH") == D(3005) and rates.live


def test_a_price_is_kept_for_the_cache_period_then_asked_again():
    clock = Clock()
    a, b = two()
    rates = service(a, b, clock=clock, cache_seconds=30)
    rates.quote("ETH")
    clock.now += 29.9
    assert rates.quote("ETH").source == "ETH/USD median of a, b" and a.asked == 1
    clock.now += 0.1  # exactly the cache period: asked again
    a.answers["ETH"] = b.answers["ETH"] = D(4000)
    assert rates.quote("ETH").rate == D(4000) and a.asked == 2


def test_while_the_sources_are_down_the_last_price_is_served_stale_and_cached_again_until_the_stale_limit():
    clock = Clock()
    a, b = two()
    rates = service(a, b, clock=clock, cache_seconds=30, stale_seconds=300)
    rates.quote("ETH")
    a.down = b.down = SourceDown("down")
    clock.now += 100
    q = rates.quote("ETH")
    assert q.rate == D(3005) and q.source == "ETH/USD median of a, b, 100 s old" and a.asked == 2
    clock.now += 10  # cached again: not asked within the cache period
    assert rates.quote("ETH").source.endswith("110 s old") and a.asked == 2
    clock.now += 189.9  # 299.9 s old, last asked 199.9 s ago: asked, and still served
    assert rates.quote("ETH").rate == D(3005) and a.asked == 3
    clock.now += 0.1  # 300 s old: past the stale limit
    with pytest.raises(RatesDown) as down:
        rates.quote("ETH")
    assert down.value.retry_after == 30 and a.asked == 4
    clock.now += 29.9  # the failure is remembered for the cache period
    with pytest.raises(RatesDown):
        rates.quote("ETH")
    assert a.asked == 4
    clock.now += 0.1
    a.down = b.down = None
    assert rates.quote("ETH").rate == D(3005) and a.asked == 5


def test_too_few_sources_agreeing_and_a_symbol_no_source_prices_are_no_price():
    rates = service(*two(eth=D(3000), eth2=D(3300)))
    with pytest.raises(RatesDown, match="disagree"):
        rates.quote("ETH")
    rates = service(*two())
    with pytest.raises(Unpriced, match="DOGE"):
        rates.quote("DOGE")
    with pytest.raises(Unpriced):  # remembered: not asked again
        rates.quote("DOGE")
    one_answers = service(Market("a", {"ETH": D(1)}), Market("b", {}, down=SourceDown("down")))
    with pytest.raises(RatesDown, match="0 of the 2"):  # one source answered: too few, not "unpriced"
        one_answers.quote("DOGE")


def test_a_source_that_fails_any_way_is_left_out():
    a, b = two()
    broken = Market("c", {}, down=KeyError("bug"))
    rates = service(a, b, broken)
    assert rates.quote("ETH").rate == D(3005)


def test_a_source_that_does_not_answer_in_time_is_left_out():
    a, b = two()
    gate = threading.Event()

    class Slow(Market):
        def prices(self, symbols):
            gate.wait(5)
            return {"ETH": D(1)}

    rates = service(Slow("slow", {}), a, b, timeout=0.1)  # asked first: the others are asked meanwhile
    try:
        started = time.monotonic()
        assert rates.quote("ETH").rate == D(3005)
        assert time.monotonic() - started < 3
    finally:
        gate.set()


def test_the_retry_after_is_the_cache_period_within_one_second_and_a_minute():
    assert service(cache_seconds=0.2).retry_after == 1
    assert service(cache_seconds=30.5).retry_after == 31
    assert service(cache_seconds=600).retry_after == 60


def test_the_settlers_quote_never_asks_a_source_and_prepare_fills_the_cache():
    a, b = two()
    rates = service(a, b)
    with pytest.raises(RateNotCached) as missing:
        rates.cached_quote("eth", "eur")
    assert a.asked == 0
    missing.value.prepare()
    assert rates.cached_quote("ETH", "EUR").rate == rates.quote("ETH", "EUR").rate and a.asked == 1
    assert rates.cached_quote("ETH", "EUR", live=False).rate == D(2000)  # test mode: fixed
    assert service().cached_quote("USDC").rate == D(1)  # par: nothing to ask
    # a failure prepare meets is remembered: the next cached quote raises it
    a.down = b.down = SourceDown("down")
    down = service(a, b)
    with pytest.raises(RateNotCached) as missing:
        down.cached_quote("ETH")
    missing.value.prepare()
    with pytest.raises(RatesDown):
        down.cached_quote("ETH")


def test_a_stablecoin_is_at_par_within_the_tolerance_and_at_market_beyond_it():
    rates = service(Market("a", {"USDC": D("0.99")}), Market("b", {"USDC": D("0.99")}), peg_tolerance_pct=D(1))
    q = rates.quote("USDC")
    assert q.rate == D(1) and q.source.startswith("USDC/USD at par (market 0.99")
    assert rates.depegs() == []
    low = service(Market("a", {"USDC": D("0.98")}), Market("b", {"USDC": D("0.98")}), peg_tolerance_pct=D(1))
    q = low.quote("USDC")
    assert q.rate == D("0.98") and "depegged" in q.source
    assert [(p.symbol, p.price, p.depegged) for p in low.depegs()] == [("USDC", D("0.98"), True)]
    assert service(*two(), fixed_live=True).depegs() == []


def test_rates_too_large_or_too_small_to_store_are_no_rate():
    assert _rate(D(3), D(2)) == D("1.5")
    with pytest.raises(RateUnavailable, match="too large"):
        _rate(D("1e18"), D(1))
    assert _rate(D("1e-18"), D(1)) == D("1e-18")
    with pytest.raises(RateUnavailable, match="too small"):
        _rate(D("4e-19"), D(1))


def test_the_settings_name_the_sources_and_the_service_takes_them():
    s = Settings.from_env(
        {
            "RATES_PROVIDERS": "kraken,coingecko",
            "RATES_URL": "http://127.0.0.1:9/p?s={symbol}",
            "RATES_MIN_SOURCES": "3",
            "RATES_MAX_DEVIATION_PCT": "0.5",
            "RATES_CACHE_SECONDS": "10",
            "RATES_STALE_SECONDS": "60",
            "RATES_TIMEOUT_SECONDS": "2",
            "STABLECOIN_PEG_TOLERANCE_PCT": "2",
            "RATE_HOLD_GRACE_MINUTES": "5",
        }
    )
    assert [x.name for x in make_sources(s)] == ["kraken", "coingecko", "url"]
    assert [x.name for x in make_sources(Settings())] == ["coinbase", "kraken", "coingecko"]
    rates = make_rates(s)
    assert (rates.min_sources, rates.max_deviation_pct, rates.cache_seconds, rates.stale_seconds) == (
        3,
        D("0.5"),
        10,
        60,
    )
    assert (rates.timeout, rates.peg_tolerance_pct, rates.hold_grace.total_seconds()) == (2, D(2), 300)
    assert not rates.fixed_live and make_rates(Settings().with_(rates={"fixed_rates_allow_live": True})).fixed_live


def test_the_defaults_need_two_sources_within_one_percent_and_hold_for_an_hour():
    rates = service(*two(eth=D(3000), eth2=D(3030)))
    assert rates.quote("ETH").rate == D(3015)  # exactly 1 % apart
    with pytest.raises(RatesDown, match="disagree"):
        service(*two(eth=D(3000), eth2=D(3031))).quote("ETH")
    with pytest.raises(RatesDown, match="1 of the 2"):
        service(Market("a", {"ETH": D(3000)})).quote("ETH")
    assert rates.hold_grace.total_seconds() == 3600
    peg = service(Market("a", {"USDC": D("0.985")}), Market("b", {"USDC": D("0.985")}))
    assert peg.quote("USDC").rate == D("0.985")  # 1.5 % off: depegged at the default 1 %


def test_a_stale_price_says_how_old_it_is_from_the_end_of_the_cache_period():
    clock = Clock()
    a, b = two()
    rates = service(a, b, clock=clock, cache_seconds=30)
    rates.quote("ETH")
    a.down = b.down = SourceDown("down")
    clock.now += 30
    assert rates.quote("ETH").source == "ETH/USD median of a, b, 30 s old"


def test_the_development_stacks_cached_quote_is_the_fixed_rate():
    assert service(*two(), fixed_live=True).cached_quote("ETH", "EUR").rate == D(2000)


def test_when_two_symbols_fail_the_first_in_order_is_raised():
    with pytest.raises(RatesDown, match="ETH/USD"):
        service(Market("a", {"ETH": D(3000), "EUR": D(1)}), Market("b", {"ETH": D(3300), "EUR": D(2)})).quote(
            "ETH", "EUR"
        )


class Gated(Market):
    """A source that answers once ``gate`` is open; ``entered`` says it was asked."""

    def __init__(self, name, prices, gate, entered):
        super().__init__(name, prices)
        self.gate, self.entered = gate, entered

    def prices(self, symbols):
        self.entered.set()
        assert self.gate.wait(5)
        return super().prices(symbols)


def gated(**kw):
    gate, entered = threading.Event(), threading.Event()
    a = Gated("a", {"ETH": D(3000)}, gate, entered)
    b = Gated("b", {"ETH": D(3010)}, gate, entered)
    return service(a, b, **kw), gate, entered, a


def in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    return t, out


def test_a_quote_while_another_refreshes_the_symbol_waits_for_that_refresh_when_nothing_is_cached():
    rates, gate, entered, a = gated(timeout=2)
    first, got_first = in_thread(lambda: rates.quote("ETH"))
    assert entered.wait(5)
    second, got_second = in_thread(lambda: rates.quote("ETH"))
    time.sleep(0.3)
    assert second.is_alive()  # waiting for the refresh under way
    gate.set()
    first.join(5), second.join(5)
    assert got_first["value"].rate == got_second["value"].rate == D(3005)
    assert a.asked == 1  # one refresh for both


def test_a_quote_while_another_refreshes_the_symbol_takes_the_stale_price_at_once():
    clock = Clock()
    rates, gate, entered, _ = gated(clock=clock, cache_seconds=30)
    gate.set()
    rates.quote("ETH")
    gate.clear()
    entered.clear()
    clock.now += 40
    first, _ = in_thread(lambda: rates.quote("ETH"))
    assert entered.wait(5)
    started = time.monotonic()
    q = rates.quote("ETH")
    assert q.source.endswith("40 s old") and time.monotonic() - started < 1
    gate.set()
    first.join(5)


def test_a_waiting_quote_waits_as_long_as_a_refresh_may_take():
    rates, gate, entered, _ = gated(timeout=1.5)
    first, _ = in_thread(lambda: rates.quote("ETH"))
    assert entered.wait(5)
    threading.Timer(1.0, gate.set).start()  # the sources answer after 1 s, within their 1.5 s
    assert rates.quote("ETH").rate == D(3005)
    first.join(5)


def test_the_development_stack_shows_no_depeg_whatever_the_market_says():
    off = (Market("a", {"USDC": D("0.9")}), Market("b", {"USDC": D("0.9")}))
    assert service(*off, fixed_live=True).depegs() == []
    assert service(*off).depegs()[0].depegged


def test_a_cross_quote_while_another_refreshes_both_symbols_takes_both_stale_prices_at_once():
    clock = Clock()
    gate, entered = threading.Event(), threading.Event()
    gate.set()
    a = Gated("a", {"ETH": D(3000), "EUR": D("1.5")}, gate, entered)
    b = Gated("b", {"ETH": D(3010), "EUR": D("1.5")}, gate, entered)
    rates = service(a, b, clock=clock, cache_seconds=30)
    rates.quote("ETH", "EUR")
    gate.clear()
    entered.clear()
    clock.now += 40
    first, _ = in_thread(lambda: rates.quote("ETH", "EUR"))  # refreshes EUR and ETH
    assert entered.wait(5)
    started = time.monotonic()
    q = rates.quote("ETH", "EUR")
    assert time.monotonic() - started < 1
    assert q.source == "ETH/USD median of a, b, 40 s old; EUR/USD median of a, b, 40 s old"
    assert str(q.rate).startswith("2003.33333")
    gate.set()
    first.join(5)


class SlowAnswer(dict):
    """A source's answer that takes until ``gate`` opens to be read (the refresh outlasts the
    sources' time limit after they answered)."""

    def __init__(self, prices, gate, reading):
        super().__init__(prices)
        self.gate, self.reading = gate, reading

    def __contains__(self, symbol):
        self.reading.set()
        assert self.gate.wait(5)
        return super().__contains__(symbol)


def test_a_quote_waiting_past_the_refresh_it_waits_for_is_told_to_retry_in_a_second():
    gate, reading = threading.Event(), threading.Event()

    class Slow(Market):
        def prices(self, symbols):
            return SlowAnswer(super().prices(symbols), gate, reading)

    rates = service(Slow("a", {"ETH": D(3000)}), Slow("b", {"ETH": D(3010)}), timeout=0.2)
    first, got_first = in_thread(lambda: rates.quote("ETH"))
    try:
        assert reading.wait(5)
        started = time.monotonic()
        with pytest.raises(RatesDown, match="being asked") as down:
            rates.quote("ETH")
        assert down.value.retry_after == 1 and time.monotonic() - started >= 1.1
    finally:
        gate.set()
        first.join(5)
    assert got_first["value"].rate == D(3005)


def test_a_quote_finding_its_symbol_refreshed_waits_when_the_cached_price_is_past_the_stale_limit():
    clock = Clock()
    gate, entered = threading.Event(), threading.Event()
    gate.set()
    a, b = Gated("a", {"ETH": D(3000)}, gate, entered), Gated("b", {"ETH": D(3010)}, gate, entered)
    rates = service(a, b, clock=clock, cache_seconds=30, stale_seconds=300)
    rates.quote("ETH")
    gate.clear()
    entered.clear()
    clock.now += 400  # past the stale limit: never served again
    a.answers["ETH"], b.answers["ETH"] = D(4000), D(4010)
    first, _ = in_thread(lambda: rates.quote("ETH"))
    assert entered.wait(5)
    second, got_second = in_thread(lambda: rates.quote("ETH"))
    time.sleep(0.3)
    assert second.is_alive()  # waiting for the refresh, not served the too-old price
    gate.set()
    first.join(5), second.join(5)
    q = got_second["value"]
    assert q.rate == D(4005) and q.source == "ETH/USD median of a, b"


def test_a_symbol_no_source_prices_leaves_the_other_symbols_refresh_cached():
    a, b = two()
    rates = service(a, b)
    with pytest.raises(Unpriced, match="DOGE"):
        rates.quote("DOGE", "EUR")  # DOGE first in order, then EUR
    assert rates.cached_quote("EUR").rate == D("1.5")
    assert a.asked == 1


def test_a_symbol_the_sources_disagree_on_leaves_the_other_symbols_refresh_cached():
    rates = service(Market("a", {"ETH": D(3000), "EUR": D("1.5")}), Market("b", {"ETH": D(3300), "EUR": D("1.5")}))
    with pytest.raises(RatesDown, match="ETH/USD"):
        rates.quote("ETH", "EUR")  # ETH first in order, then EUR
    assert rates.cached_quote("EUR").rate == D("1.5")
