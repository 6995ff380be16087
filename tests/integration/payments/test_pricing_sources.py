"""Prices in the merchant's currency from several market sources, through the API, with
local HTTP doubles of Coinbase, Kraken and CoinGecko answering in their real formats
(DESIGN §9): all agree; one down; one far off; all down past the stale limit, then back;
a stablecoin depegged; a EUR product bought in ETH, USDC and BTC; a JPY payment; funds
arriving after the rate lock."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment
from kassa_common.payments.settle import settle
from kassa_common.pricing.service import make_rates
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from tests.support.api import API, assert_error
from tests.support.dashboard import csrf_of, merchant_with_password
from tests.support.rate_doubles import app_with, created, doubles, live, pay, settings_for, settle_with_rates, start_all  # noqa: F401  (fixtures)
from tests.support.shop import shop  # noqa: F401 - fixture
from tests.support.transfers import report


@pytest.fixture
def api(settings, engine, base_env, doubles):
    return app_with(settings, engine, base_env, doubles)


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# ---- sources ---------------------------------------------------------------------------------


def test_all_sources_agree_the_rate_is_their_median_and_locked(api, live, doubles):
    doubles["kraken"].set(ETH="3010")
    doubles["coingecko"].set(ETH="2990")
    answers = {n: sample("kassa_rate_source_answers_total", source=n) for n in doubles}
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["currency"] == "USD" and p["exchange_rate"] == "3000" and p["crypto_amount"] == "0.01"
    assert p["rate_source"] == "ETH/USD median of coinbase, coingecko, kraken"
    assert p["rate_locked_until"] == p["expires_at"]  # the lock defaults to the payment lifetime
    assert all(sample("kassa_rate_source_answers_total", source=n) == answers[n] + 1 for n in doubles)
    assert sample("kassa_rate_source_deviation_pct", source="kraken", symbol="ETH") == pytest.approx(1 / 3, rel=1e-3)
    again = created(pay(api, live, amount=30, token="ETH"))  # cached: nobody asked again
    assert again["exchange_rate"] == "3000" and all(d.hits == 1 for d in doubles.values())


def test_one_source_down_the_others_price_it(api, live, doubles):
    doubles["kraken"].down = True
    errors = sample("kassa_rate_source_errors_total", source="kraken")
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["exchange_rate"] == "3000" and p["rate_source"] == "ETH/USD median of coinbase, coingecko"
    assert sample("kassa_rate_source_errors_total", source="kraken") == errors + 1


def test_a_source_that_does_not_answer_in_time_is_left_out(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles, timeout_seconds=0.3)
    doubles["coingecko"].hang = 2
    started = time.monotonic()
    p = created(pay(api, live, amount=30, token="ETH"))
    assert time.monotonic() - started < 1.5
    assert p["rate_source"] == "ETH/USD median of coinbase, kraken"


def test_one_source_far_off_is_excluded_and_too_few_left_is_a_503(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles, cache_seconds=0.05, stale_seconds=0.05)
    doubles["coinbase"].set(ETH="3300")  # 10% off the others
    excluded = sample("kassa_rate_source_excluded_total", source="coinbase")
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["exchange_rate"] == "3000"
    assert p["rate_source"] == "ETH/USD median of coingecko, kraken (excluded: coinbase)"
    assert sample("kassa_rate_source_excluded_total", source="coinbase") == excluded + 1
    assert sample("kassa_rate_source_deviation_pct", source="coinbase", symbol="ETH") == pytest.approx(10)

    time.sleep(0.1)
    doubles["kraken"].down = True  # left: coinbase 3300 and coingecko 3000, 10% apart
    r = pay(api, live, amount=30, token="ETH")
    error = assert_error(r, 503, "SERVICE_UNAVAILABLE")
    assert "disagree" in error["message"] and int(r.headers["Retry-After"]) >= 1


def test_all_sources_down_past_the_stale_limit_is_a_503_then_it_recovers(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles, cache_seconds=0.2, stale_seconds=1.0)
    assert created(pay(api, live, amount=30, token="ETH"))["exchange_rate"] == "3000"
    for d in doubles.values():
        d.down = True
    time.sleep(0.3)  # past the cache, within the stale limit: the last price, said to be old
    stale = created(pay(api, live, amount=30, token="ETH"))
    assert stale["exchange_rate"] == "3000" and " s old" in stale["rate_source"]
    time.sleep(1.0)  # past the stale limit: no guess
    r = pay(api, live, amount=30, token="ETH")
    error = assert_error(r, 503, "SERVICE_UNAVAILABLE")
    assert r.headers["Retry-After"] == "1" and "0 of the 2 rate sources" in error["message"]
    before = sum(d.hits for d in doubles.values())
    for d in doubles.values():
        d.down = False
        d.set(ETH="2500")
    time.sleep(0.25)  # the failure is remembered for the cache period (Retry-After): nobody asks before
    back = created(pay(api, live, amount=30, token="ETH"))
    assert back["exchange_rate"] == "2500" and back["crypto_amount"] == "0.012"
    assert sum(d.hits for d in doubles.values()) > before


def test_a_product_page_says_503_rather_than_guess(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles)
    product = api.post(
        f"{API}/products", json={"name": "Mug", "price": 12, "currency": "EUR"}, headers=live.headers("live")
    ).get_json()["data"]
    for d in doubles.values():
        d.down = True
    page = api.get(f"/products/{product['id']}")
    r = api.post(f"/products/{product['id']}", data={"csrf_token": csrf_of(page), "pair": "LOCAL_EVM:ETH"})
    assert r.status_code == 503 and r.headers["Retry-After"] and "rate" in r.get_data(as_text=True)


# ---- stablecoins -----------------------------------------------------------------------------


def test_a_stablecoin_within_the_tolerance_is_at_par(api, live):
    p = created(pay(api, live, amount=100, token="USDC"))  # the market says 1.0001
    assert p["exchange_rate"] == "1" and p["crypto_amount"] == "100"
    assert p["rate_source"].startswith("USDC/USD at par (market 1.0001")


def test_a_depegged_stablecoin_is_priced_at_market_and_the_overview_shows_it(api, live, doubles, sessions):
    for d in doubles.values():
        d.set(USDC="0.95")
    p = created(pay(api, live, amount=100, token="USDC"))
    assert p["exchange_rate"] == "0.95" and p["crypto_amount"] == "105.263158"
    assert "depegged" in p["rate_source"]
    assert sample("kassa_stablecoin_price_usd", symbol="USDC") == pytest.approx(0.95)
    email = merchant_with_password(sessions)
    api.post(
        "/dashboard/login",
        data={"csrf_token": csrf_of(api.get("/dashboard/login")), "email": email, "password": "s3cret-pass"},
    )
    page = api.get("/dashboard/overview").get_data(as_text=True)
    assert 'id="depeg"' in page and "USDC" in page and "0.95" in page


# ---- the merchant's currency -----------------------------------------------------------------


@pytest.mark.parametrize(
    "token, network, rate, crypto",
    [
        ("ETH", "LOCAL_EVM", "2777.777777777777777778", "0.018"),
        ("USDC", "LOCAL_EVM", "0.925925925925925926", "54"),
        ("BTC", "BITCOIN_REGTEST", "55555.555555555555555556", "0.0009"),
    ],
)
def test_a_eur_product_bought_in_eth_usdc_and_btc(api, live, token, network, rate, crypto):
    product = api.post(
        f"{API}/products", json={"name": "Mug", "price": 50, "currency": "EUR"}, headers=live.headers("live")
    )
    assert product.status_code == 201 and product.get_json()["data"]["currency"] == "EUR"
    p = created(pay(api, live, product_id=product.get_json()["data"]["id"], token=token, network=network))
    assert (p["amount"], p["currency"]) == (50, "EUR")
    assert p["exchange_rate"] == rate and p["crypto_amount"] == crypto
    assert "EUR/USD median of coinbase, coingecko, kraken" in p["rate_source"]
    assert Decimal(p["crypto_amount"]) * Decimal(p["exchange_rate"]) >= 50  # rounded up, never short


def test_a_jpy_payment(api, live):
    p = created(pay(api, live, amount=400, currency="jpy", token="USDC"))
    assert (p["amount"], p["currency"]) == (400, "JPY")
    assert p["crypto_amount"] == "2.68" and p["exchange_rate"] == "149.25373134328358209"
    page = api.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert "¥400" in page and "JPY" in page


def test_test_mode_is_priced_by_the_fixed_rates(api, live, doubles):
    for d in doubles.values():
        d.down = True
    r = api.post(
        f"{API}/payments",
        json={"amount": 10.80, "currency": "EUR", "token": "ETH", "network": "BASE"},
        headers=live.headers("test"),
    )
    p = created(r)
    assert p["rate_source"] == "fixed" and p["exchange_rate"] == "2777.777777777777777778"
    assert p["crypto_amount"] == "0.003888"  # 10.80 EUR = 11.664 USD at 1.08, over 3000


# ---- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, field",
    [
        ({"amount": 10.5, "currency": "JPY"}, "amount"),
        ({"amount": 12.345, "currency": "EUR"}, "amount"),
        ({"amount": 10, "currency": "XYZ"}, "currency"),
        ({"amount": 10, "currency": "BHD"}, "currency"),
        ({"amount": 10, "currency": "EURO"}, "currency"),
        ({"amount": 10, "currency": 978}, "currency"),
    ],
)
def test_bad_currencies_and_amounts_are_400(api, live, body, field):
    error = assert_error(pay(api, live, token="USDC", **body), 400, "VALIDATION_ERROR")
    assert any(d["field"] == field for d in error["details"]), error


def test_a_currency_no_source_prices_is_400_and_a_product_keeps_its_currency(api, live, doubles):
    r = api.post(
        f"{API}/payments",
        json={"amount": 10, "currency": "SEK", "token": "ETH", "network": "BASE"},
        headers=live.headers("test"),
    )  # an ISO code FIXED_RATES does not list
    assert assert_error(r, 400, "VALIDATION_ERROR")["details"][0]["field"] == "currency"
    r = pay(api, live, amount=10, currency="SEK", token="ETH")  # the market sources price no SEK either
    assert assert_error(r, 400, "VALIDATION_ERROR")["details"][0]["field"] == "currency"
    product = api.post(
        f"{API}/products", json={"name": "Mug", "price": 5, "currency": "GBP"}, headers=live.headers("live")
    ).get_json()["data"]
    r = pay(api, live, product_id=product["id"], currency="EUR", token="USDC")
    assert assert_error(r, 400, "VALIDATION_ERROR")["details"][0]["field"] == "currency"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"price": 10.5, "currency": "JPY"}, "price"),
        ({"price": 10.005, "currency": "EUR"}, "price"),
        ({"price": 10, "currency": "ZZZ"}, "currency"),
        (
            {"price": 1, "currency": "EUR", "currency_type": "CRYPTO", "token": "ETH", "network": "LOCAL_EVM"},
            "currency",
        ),
    ],
)
def test_bad_product_currencies_are_400(api, live, body, field):
    r = api.post(f"{API}/products", json={"name": "Mug", **body}, headers=live.headers("live"))
    error = assert_error(r, 400, "VALIDATION_ERROR")
    assert any(d["field"] == field for d in error["details"]), error


# ---- spread and lock -------------------------------------------------------------------------


def terms(sessions, merchant_id, spread="0", lock=None):
    with unit_of_work(sessions) as s:
        m = s.get(Merchant, merchant_id)
        m.rate_spread_pct, m.rate_lock_minutes = Decimal(spread), lock


def test_the_spread_is_added_to_what_the_customer_pays(api, live, sessions):
    terms(sessions, live.id, spread="2", lock=15)
    p = created(pay(api, live, amount=102, token="ETH"))
    assert p["exchange_rate"] == "2941.176470588235294118" and p["crypto_amount"] == "0.03468"
    assert p["rate_source"].endswith("; spread 2.00%")
    locked = p["rate_locked_until"]
    assert locked < p["expires_at"]


@pytest.mark.parametrize("market, status", [("2000", "PARTIALLY_PAID"), ("3100", "COMPLETED")])
def test_funds_after_the_lock_are_valued_at_the_rate_of_their_arrival(
    api, live, sessions, doubles, settings, market, status
):
    terms(sessions, live.id, lock=1)
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["crypto_amount"] == "0.01"
    with unit_of_work(sessions) as s:  # the lock ran out a minute ago
        s.execute(
            sa.update(Payment).where(Payment.id == p["id"]).values(rate_locked_until=utcnow() - timedelta(minutes=1))
        )
    for d in doubles.values():
        d.set(ETH=market)
    rates = make_rates(settings.with_(**settings_for(doubles)))
    settle_with_rates(sessions, report(p, TransferStatus.CONFIRMED, 10**16, 1), rates)
    shown = api.get(f"{API}/payments/{p['id']}", headers=live.headers("live")).get_json()["data"]
    assert shown["status"] == status and shown["amount_received"] == "0.01"
    assert shown["exchange_rate"] == "3000" and shown["arrival_exchange_rate"] == market


def test_funds_within_the_lock_keep_the_quoted_rate(api, live, sessions, doubles, settings):
    p = created(pay(api, live, amount=30, token="ETH"))
    for d in doubles.values():
        d.set(ETH="2000")
    with unit_of_work(sessions) as s:
        settle(s, report(p, TransferStatus.CONFIRMED, 10**16, 1), make_rates(settings.with_(**settings_for(doubles))))
    shown = api.get(f"{API}/payments/{p['id']}", headers=live.headers("live")).get_json()["data"]
    assert shown["status"] == "COMPLETED" and shown["arrival_exchange_rate"] is None


def test_the_dashboard_shows_the_currency_and_both_rates(shop, sessions, settings):
    key = {"X-Api-Key": shop.keys["test"]}
    p = created(
        shop.post(
            f"{API}/payments", json={"amount": 27, "currency": "EUR", "token": "ETH", "network": "BASE"}, headers=key
        )
    )
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment).where(Payment.id == p["id"]).values(rate_locked_until=utcnow() - timedelta(minutes=1))
        )
    later = make_rates(
        settings.with_(rates={"fixed_rates": "ETH=2000,EUR=1.08"})
    )  # the market moved (test mode: fixed)
    with unit_of_work(sessions) as s:
        settle(s, report(p, TransferStatus.CONFIRMED, 10**16, 1), later)
    page = shop.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)
    assert "€27.00 in ETH on Base" in page
    assert "1 ETH = 2777.777777777777777778 EUR" in page and 'id="arrival-rate"' in page
    assert "1 ETH = 1851.851851851851851852 EUR" in page
    shown = shop.get(f"{API}/payments/{p['id']}", headers=key).get_json()["data"]
    assert shown["status"] == "PARTIALLY_PAID" and shown["arrival_exchange_rate"] == "1851.851851851851851852"
    assert "€27.00" in shop.get("/dashboard/payments").get_data(as_text=True)
    csv = shop.get("/dashboard/payments/export.csv").get_data(as_text=True)
    header, *_rows = csv.splitlines()
    assert {"currency", "rate_source", "rate_locked_until", "arrival_exchange_rate"} <= set(header.split(","))
