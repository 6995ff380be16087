"""Pricing's pure logic: currencies and minor units, the median combiner, the merchant's
terms (spread, lock), valuing funds that arrive after the lock, and the settings."""

from __future__ import annotations

from collections import namedtuple
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from kassa_common.config import Settings
from kassa_common.pricing import currencies, terms
from kassa_common.pricing.arrival import latest_arrival_rate, valued_units
from kassa_common.pricing.combine import NoConsensus, combine

D = Decimal


@pytest.mark.parametrize("code, places", [("usd", 2), ("EUR", 2), (" gbp ", 2), ("JPY", 0), ("KRW", 0), ("CHF", 2)])
def test_currencies_and_their_minor_units(code, places):
    assert currencies.minor_units(currencies.normalise(code)) == places


def test_no_currency_is_usd():
    assert currencies.normalise(None) == "USD"


@pytest.mark.parametrize("code", ["XYZ", "EURO", "", "BHD", "KWD", "usdc"])
def test_unknown_and_three_place_currencies_are_refused(code):
    with pytest.raises(currencies.UnknownCurrency):
        currencies.normalise(code)


def test_amounts_fit_the_currencys_minor_units():
    assert currencies.fits(D("10"), "JPY") and not currencies.fits(D("10.5"), "JPY")
    assert currencies.fits(D("10.50"), "EUR") and not currencies.fits(D("10.505"), "EUR")
    assert currencies.rounded(D("0.004"), "EUR") == D("0.01")  # at least one minor unit


@pytest.mark.parametrize(
    "amount, code, text",
    [
        (D("12.5"), "USD", "$12.50"),
        (12.5, "EUR", "€12.50"),
        (D("400"), "JPY", "¥400"),
        ("9.99", "CHF", "9.99 CHF"),
        (D("1234.5"), None, "$1234.50"),
    ],
)
def test_money_as_people_read_it(amount, code, text):
    assert currencies.money(amount, code) == text


def test_money_grouped_by_thousands():
    assert currencies.money(D("3086.5"), "USD", True) == "$3,086.50"
    assert currencies.money(D("1234567"), "JPY", True) == "¥1,234,567"


def test_the_median_of_sources_that_agree():
    c = combine({"coinbase": D(3000), "kraken": D(3010), "coingecko": D(2990)}, min_sources=2, max_deviation_pct=D(1))
    assert c.price == D(3000) and c.used == ("coinbase", "coingecko", "kraken") and not c.excluded
    assert c.describe() == "median of coinbase, coingecko, kraken"
    two = combine({"coinbase": D(3000), "kraken": D(3002)}, min_sources=2, max_deviation_pct=D(1))
    assert two.price == D(3001)


def test_a_far_off_source_is_left_out():
    c = combine({"coinbase": D(3300), "kraken": D(3000), "coingecko": D(3001)}, min_sources=2, max_deviation_pct=D(1))
    assert c.price == D("3000.5") and c.excluded == ("coinbase",)
    assert round(c.deviation_pct["coinbase"], 2) == D("9.96")  # from the median of all three, 3001
    assert c.describe() == "median of coingecko, kraken (excluded: coinbase)"


@pytest.mark.parametrize(
    "answers, why",
    [
        ({"coinbase": D(3000)}, "1 of the 2"),
        ({}, "0 of the 2"),
        ({"coinbase": D(3300), "kraken": D(3000)}, "disagree"),
        ({"coinbase": D(3300), "kraken": D(3000), "coingecko": D(2700)}, "disagree"),
    ],
)
def test_too_few_or_disagreeing_sources_give_no_price(answers, why):
    with pytest.raises(NoConsensus, match=why):
        combine(answers, min_sources=2, max_deviation_pct=D(1))


@pytest.mark.parametrize(
    "answers, kept, price",
    [
        ({"a": D(3000), "b": D(3030)}, ("a", "b"), D(3015)),  # exactly 1% apart: agreeing
        ({"a": D(2990), "b": D(3020), "c": D(3050)}, ("b", "c"), D(3035)),  # b-c 0.99%, a-b 1.003%
        ({"a": D(3000), "b": D(3010), "c": D(3020), "d": D(3100)}, ("a", "b", "c"), D(3010)),
        ({"a": D(3000), "b": D(3015), "c": D(3030)}, ("a", "b", "c"), D(3015)),  # all within 1%
    ],
)
def test_the_answers_kept_agree_with_each_other_not_only_with_their_median(answers, kept, price):
    c = combine(answers, min_sources=2, max_deviation_pct=D(1))
    assert (c.used, c.price) == (kept, price)


def test_two_sources_twice_the_limit_apart_give_no_price_though_each_is_within_it_of_their_median():
    with pytest.raises(NoConsensus, match="disagree"):
        combine({"coinbase": D(3000), "kraken": D(3059)}, min_sources=2, max_deviation_pct=D(1))


def test_rates_and_amounts_use_60_digits():
    from kassa_common.pricing.fixed import RateUnavailable
    from kassa_common.pricing.service import _rate

    big = _rate(D(10**12), D("0.0067"))  # 1.49e14 per unit: 33 digits at 18 places
    assert terms.stored(big) == D("149253731343283.582089552238805970")
    assert terms.with_spread(big, D(1)) < big
    with pytest.raises(RateUnavailable, match="too large"):
        _rate(D("1e18"), D(1))
    assert valued_units(P(D(10**12)), [Row(10**40, True, "CONFIRMED", D(10**12) / 2, T0)]) == 10**40 // 2
    with pytest.raises(Exception, match="largest amount"):
        terms.price_units(D(10**9), "JPY", D(10**8), 8)


def test_one_source_is_enough_when_the_operator_says_so():
    assert combine({"url": D(5)}, min_sources=1, max_deviation_pct=D(1)).describe() == "url"


@pytest.mark.parametrize(
    "text, pct", [("0", D("0.00")), ("2.5", D("2.50")), ("10%", D("10.00")), (" 0.01 ", D("0.01"))]
)
def test_spread_percentages(text, pct):
    assert terms.parse_spread(text) == pct


@pytest.mark.parametrize("text", ["-1", "10.01", "0.001", "abc", "", "NaN", "1e3"])
def test_bad_spreads_are_refused(text):
    with pytest.raises(terms.TermsError):
        terms.parse_spread(text)


@pytest.mark.parametrize("text, minutes", [("", None), ("default", None), ("1", 1), ("2880", 2880)])
def test_rate_locks(text, minutes):
    assert terms.parse_lock(text) == minutes


@pytest.mark.parametrize("text", ["0", "2881", "1.5", "-3", "x"])
def test_bad_rate_locks_are_refused(text):
    with pytest.raises(terms.TermsError):
        terms.parse_lock(text)


def test_the_spread_is_paid_by_the_customer_and_amount_equals_crypto_times_rate():
    priced = terms.price_amount(D(102), "EUR", D(3000), 18, D(2))
    assert priced.rate == D("2941.176470588235294118") and priced.units == 34_680_000_000_000_000
    assert D(priced.units) / 10**18 * priced.rate >= D(102)
    assert terms.price_amount(D(10), "USD", D(1), 6, D(0)).rate == D(1)


def test_the_lock_never_outlasts_the_payment():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert terms.lock_until(now, 60, None) == now + timedelta(minutes=60)
    assert terms.lock_until(now, 60, 15) == now + timedelta(minutes=15)
    assert terms.lock_until(now, 60, 120) == now + timedelta(minutes=60)


Row = namedtuple("Row", "amount_units counted status exchange_rate created_at")
P = namedtuple("P", "exchange_rate")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_funds_after_the_lock_count_at_their_arrival_rate():
    p = P(D(3000))
    rows = [
        Row(5 * 10**15, True, "CONFIRMED", None, T0),  # in time: as is
        Row(5 * 10**15, True, "CONFIRMED", D(2400), T0 + timedelta(minutes=5)),  # late, price fell 20%
        Row(10**18, False, "CONFIRMED", D(9999), T0),  # not the payment's token: never counts
        Row(10**18, True, "SEEN", D(9999), T0),
    ]  # not confirmed yet
    assert valued_units(p, rows) == 5 * 10**15 + 4 * 10**15
    assert latest_arrival_rate(rows) == D(2400)  # the latest counted one to arrive
    assert latest_arrival_rate(rows[:1]) is None


def test_rate_settings_are_read_and_checked():
    s = Settings.from_env(
        {
            "RATES_PROVIDERS": "kraken, coingecko",
            "RATES_MIN_SOURCES": "2",
            "RATES_MAX_DEVIATION_PCT": "0.5",
            "RATES_CACHE_SECONDS": "10",
            "RATES_STALE_SECONDS": "60",
            "STABLECOIN_PEG_TOLERANCE_PCT": "2",
            "RATES_KRAKEN_URL": "http://127.0.0.1:9/",
            "RATE_HOLD_GRACE_MINUTES": "0",
        }
    )
    assert s.rates.hold_grace_minutes == 0 and Settings().rates.hold_grace_minutes == 60
    assert s.rates.providers == ("kraken", "coingecko") and s.rates.max_deviation_pct == D("0.5")
    assert s.rates.kraken_url == "http://127.0.0.1:9" and s.rates.stablecoin_peg_tolerance_pct == D(2)
    assert Settings.from_env({"RATES_PROVIDERS": "none"}).rates.providers == ()
    assert Settings().rates.providers == ("coinbase", "kraken", "coingecko")
    for env, name in [
        ({"RATES_PROVIDERS": "binance"}, "RATES_PROVIDERS"),
        ({"RATES_PROVIDERS": "kraken"}, "RATES_MIN_SOURCES"),
        ({"RATES_MAX_DEVIATION_PCT": "-1"}, "RATES_MAX_DEVIATION_PCT"),
        ({"RATES_CACHE_SECONDS": "60", "RATES_STALE_SECONDS": "30"}, "RATES_STALE_SECONDS"),
        ({"FIXED_RATES": "EUR=0"}, "FIXED_RATES"),
        ({"RATE_HOLD_GRACE_MINUTES": "-1"}, "RATE_HOLD_GRACE_MINUTES"),
    ]:
        with pytest.raises(ValueError, match=name):
            Settings.from_env(env)


def test_the_sweeper_values_at_the_fixed_rates_when_no_market_source_is_configured():
    from kassa_common.pricing import make_rates

    rates = make_rates(Settings().with_(rates={"providers": (), "fixed_rates": "ETH=2500"}))
    assert rates.usd_rate("eth") == D(2500) and not rates.live
    with pytest.raises(Exception, match="RATES_PROVIDERS"):
        rates.quote("ETH", "USD", live=True)  # a live payment is never priced on them


def test_the_currencies_priced_whatever_the_markets_say_are_usd_and_the_fixed_rates_ones():
    assert currencies.priced("ETH=3000,EUR=1.08,JPY=0.0067") == ["EUR", "JPY", "USD"]  # ETH is no currency
    assert currencies.priced("ETH=3000") == ["USD"]


def test_terms_default_to_no_spread_and_set_terms_changes_only_what_is_given():
    from types import SimpleNamespace

    m = SimpleNamespace(rate_spread_pct=None, rate_lock_minutes=None)
    assert terms.terms_of(m) == (D(0), None) and terms.terms_of(m).spread_text == "0"
    terms.set_terms(m, spread="2.5")
    assert (m.rate_spread_pct, m.rate_lock_minutes) == (D("2.50"), None)
    terms.set_terms(m, lock="15")
    assert (m.rate_spread_pct, m.rate_lock_minutes) == (D("2.50"), 15)
    with pytest.raises(terms.TermsError):
        terms.set_terms(m, spread="1", lock="0")  # both checked before either changes
    assert (m.rate_spread_pct, m.rate_lock_minutes) == (D("2.50"), 15)


def test_a_spread_is_read_from_one_to_twenty_characters():
    assert terms.parse_spread("5") == D("5.00")
    assert terms.parse_spread("0" * 16 + "2.50") == D("2.50")  # 20 characters
    with pytest.raises(terms.TermsError):
        terms.parse_spread("0" * 17 + "2.50")  # 21: refused before it is read


def test_a_crypto_price_worth_exactly_the_largest_amount_is_priced_with_no_spread():
    priced = terms.price_units(D("9999999999999999.99"), "USD", D(1), 2)
    assert priced.amount == currencies.MAX_AMOUNT and priced.spread_pct == 0 and priced.units == 999999999999999999
    assert terms.price_units(D("0.5"), "EUR", D(3000), 18) == terms.Priced(D(1500), 5 * 10**17, D(3000), D(0))


def _rates(grace=60):
    from kassa_common.pricing.fixed import FixedRates, parse_fixed_rates
    from kassa_common.pricing.service import RateService

    return RateService(FixedRates(parse_fixed_rates("ETH=3000,EUR=1.5")), hold_grace_minutes=grace)


def _payment(**kw):
    from types import SimpleNamespace

    base = {
        "id": "p",
        "token": "ETH",
        "currency": "EUR",
        "test_mode": True,
        "rate_spread_pct": None,
        "rate_locked_until": T0,
        "exchange_rate": D(1),
    }
    return SimpleNamespace(**{**base, **kw})


def test_funds_first_seen_after_the_lock_get_the_rate_of_that_moment_with_the_spread():
    from kassa_common.pricing.arrival import rate_at_arrival

    rates, p = _rates(), _payment()
    assert rate_at_arrival(rates, p, T0) is None  # at the end of the lock: still locked
    assert rate_at_arrival(rates, p, T0 + timedelta(seconds=1)) == D(2000)  # 3000 USD at 1.5 USD per EUR
    assert rate_at_arrival(rates, _payment(rate_spread_pct=D(25)), T0 + timedelta(seconds=1)) == D(1600)
    assert rate_at_arrival(rates, _payment(rate_locked_until=None), T0) is None  # no lock
    assert rate_at_arrival(None, p, T0 + timedelta(seconds=1)) is None  # no rate service
    assert rate_at_arrival(rates, _payment(currency="CHF"), T0 + timedelta(seconds=1)) is None  # no rate: as it is


def test_a_rate_holds_for_its_confirmation_until_the_grace_after_the_lock_or_the_later_sighting():
    from types import SimpleNamespace

    from kassa_common.pricing.arrival import hold_until, rate_at_confirmation

    rates, p = _rates(grace=60), _payment()
    early, late = (
        SimpleNamespace(created_at=T0 - timedelta(minutes=5)),
        SimpleNamespace(created_at=T0 + timedelta(hours=2)),
    )
    assert hold_until(rates, p, early) == T0 + timedelta(minutes=60)
    assert hold_until(rates, p, late) == T0 + timedelta(hours=3)
    assert hold_until(rates, _payment(rate_locked_until=None), early) is None
    until = T0 + timedelta(minutes=60)
    assert rate_at_confirmation(rates, p, early, until) is None
    assert rate_at_confirmation(rates, p, early, until + timedelta(seconds=1)) == D(2000)
    assert rate_at_confirmation(None, p, early, until + timedelta(days=1)) is None
    assert rate_at_confirmation(rates, _payment(rate_locked_until=None), early, until + timedelta(days=1)) is None


def test_with_one_source_enough_and_none_agreeing_the_answer_nearest_the_median_is_the_price():
    c = combine({"a": D(1), "b": D(2), "c": D(4)}, min_sources=1, max_deviation_pct=D(1))
    assert (c.price, c.used, c.excluded) == (D(2), ("b",), ("a", "c"))


def test_of_two_agreeing_groups_as_large_and_as_tight_the_one_nearest_the_median_of_all_is_kept():
    answers = {"a": D(100), "b": D(101), "c": D(190), "d": D(200), "e": D(202), "f": D(300)}  # median of all: 195
    c = combine(answers, min_sources=2, max_deviation_pct=D(1))
    assert (c.used, c.price) == (("d", "e"), D(201))


def test_funds_not_counted_or_not_confirmed_are_passed_over_wherever_they_are_in_the_list():
    p = P(D(3000))
    rows = [
        Row(10**18, False, "CONFIRMED", None, T0),
        Row(10**18, True, "SEEN", None, T0),
        Row(7, True, "CONFIRMED", None, T0),
    ]
    assert valued_units(p, rows) == 7


def test_the_arrival_rate_shown_is_the_latest_counted_transfers_own():
    rows = [
        Row(1, True, "CONFIRMED", D(2400), T0 + timedelta(minutes=5)),
        Row(1, False, "CONFIRMED", D(9999), T0 + timedelta(minutes=10)),  # another token: never counted
        Row(1, True, "SEEN", None, T0 + timedelta(minutes=15)),  # at the locked rate
    ]
    assert latest_arrival_rate(rows) == D(2400)
