"""Rates under outage and attack (DESIGN §10 "Rates under outage", §9), through the API and
the real settler, with local HTTP doubles of Coinbase, Kraken and CoinGecko: while every
source hangs, a stale price is cached like a fresh one and no quote waits behind another's
slow source call; the settler never asks a source while its transaction holds payment rows;
the answers kept agree with each other (max/min − 1), not only with their median; rates of
1e12 and products worth more than a payment can hold are answered, not a 500; funds seen
in the mempool within the rate lock keep the locked rate only for a bounded grace."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from decimal import Decimal, localcontext

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.publisher import Publisher
from kassa_common.models import Payment, Transfer
from kassa_common.pricing.service import make_rates
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from tests.support.api import API, assert_error
from tests.support.bus import private_topology, running_settler
from tests.support.rate_doubles import app_with, created, doubles, live, pay, settings_for, settle_with_rates, start_all  # noqa: F401  (fixtures)
from tests.support.transfers import report, tx_hash
from tests.support.wait import until


def shown(client, merchant, p) -> dict:
    return client.get(f"{API}/payments/{p['id']}", headers=merchant.headers("live")).get_json()["data"]


def hang_all(doubles, seconds: float) -> None:
    for d in doubles.values():
        d.hang = seconds


# ---- a stale answer is cached like a fresh one -------------------------------------------------


def test_while_every_source_hangs_the_stale_price_is_cached_not_asked_for_on_every_quote(
    settings, engine, base_env, live, doubles
):
    api = app_with(settings, engine, base_env, doubles, timeout_seconds=1, cache_seconds=2, stale_seconds=120)
    assert created(pay(api, live, amount=30, token="ETH"))["exchange_rate"] == "3000"
    hang_all(doubles, 3)
    time.sleep(2.1)  # past the cache: the next quote asks, and every source hangs
    hits = {n: d.hits for n, d in doubles.items()}
    started = time.monotonic()
    for _ in range(20):
        p = created(pay(api, live, amount=30, token="ETH"))
        assert p["exchange_rate"] == "3000" and " s old" in p["rate_source"]
    elapsed = time.monotonic() - started
    assert elapsed < 8, f"20 quotes took {elapsed:.1f} s: the sources were asked again and again"  # was 20
    asked = {n: d.hits - hits[n] for n, d in doubles.items()}
    assert all(1 <= n <= 1 + elapsed // 2 for n in asked.values()), asked  # once per cache period


def test_with_no_price_at_all_and_every_source_hanging_twenty_quotes_take_about_one_timeout(
    settings, engine, base_env, live, doubles
):
    api = app_with(settings, engine, base_env, doubles, timeout_seconds=1, cache_seconds=5)
    hang_all(doubles, 3)
    started = time.monotonic()
    for _ in range(20):
        r = pay(api, live, amount=30, token="ETH")
        assert_error(r, 503, "SERVICE_UNAVAILABLE")
        assert int(r.headers["Retry-After"]) >= 1
    elapsed = time.monotonic() - started
    assert elapsed < 6, f"20 quotes took {elapsed:.1f} s"  # was 20: each asked every source
    assert all(d.hits == 1 for d in doubles.values()), {n: d.hits for n, d in doubles.items()}


def test_no_quote_waits_behind_another_quotes_slow_source_call(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles, timeout_seconds=1.5, cache_seconds=0.5, stale_seconds=120)
    assert created(pay(api, live, amount=30, token="ETH"))["exchange_rate"] == "3000"
    hang_all(doubles, 4)
    time.sleep(0.6)  # past the cache
    first: dict = {}
    slow = threading.Thread(
        target=lambda: first.update(r=pay(api.application.test_client(), live, amount=30, token="ETH"))
    )
    slow.start()
    until(lambda: all(d.hits >= 2 for d in doubles.values()), message="the first quote asks the sources")
    started = time.monotonic()
    p = created(pay(api, live, amount=30, token="ETH"))  # the refresh is under way: the stale price now
    waited = time.monotonic() - started
    slow.join(10)
    assert p["exchange_rate"] == "3000" and " s old" in p["rate_source"]
    assert waited < 1.2, f"the second quote waited {waited:.1f} s behind the first one's sources"
    assert created(first["r"])["exchange_rate"] == "3000"
    assert all(d.hits == 2 for d in doubles.values())  # the second quote asked nobody


# ---- the answers kept agree with each other ---------------------------------------------------


def test_two_sources_two_limits_apart_are_refused(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles, max_deviation_pct=Decimal(1))
    doubles["kraken"].down = True
    doubles["coinbase"].set(ETH="3000")
    doubles["coingecko"].set(ETH="3059")  # 1.97% apart, each 0.98% from their median
    r = pay(api, live, amount=30, token="ETH")
    error = assert_error(r, 503, "SERVICE_UNAVAILABLE")
    assert "disagree" in error["message"] and int(r.headers["Retry-After"]) >= 1


def test_of_three_sources_within_the_limit_of_their_median_the_agreeing_pair_is_kept(
    settings, engine, base_env, live, doubles
):
    api = app_with(settings, engine, base_env, doubles, max_deviation_pct=Decimal(1))
    doubles["coinbase"].set(ETH="2990")
    doubles["kraken"].set(ETH="3020")
    doubles["coingecko"].set(ETH="3050")  # each within 1% of 3020; 2990 and 3050 are 2% apart
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["rate_source"] == "ETH/USD median of coingecko, kraken (excluded: coinbase)"
    assert p["exchange_rate"] == "3035"


# ---- large numbers ----------------------------------------------------------------------------


def test_a_rate_of_1e12_is_priced_not_a_500(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles)
    for d in doubles.values():
        d.set(ETH="1000000000000")
    p = created(pay(api, live, amount=30, token="ETH"))
    assert p["exchange_rate"] == "1000000000000" and p["crypto_amount"] == "0.00000001"
    p = created(pay(api, live, amount=30000, currency="JPY", token="ETH"))
    with localcontext() as ctx:
        ctx.prec = 60
        assert Decimal(p["exchange_rate"]) == (Decimal(10**12) / Decimal("0.0067")).quantize(Decimal("1e-18"))


def test_a_rate_too_large_to_store_is_a_503_not_a_500(settings, engine, base_env, live, doubles):
    api = app_with(settings, engine, base_env, doubles)
    for d in doubles.values():
        d.set(ETH="1e20")
    r = pay(api, live, amount=30, token="ETH")
    assert "too large" in assert_error(r, 503, "SERVICE_UNAVAILABLE")["message"]


def test_a_crypto_product_worth_more_than_a_payment_holds_is_a_400_and_the_page_says_so(
    settings, engine, base_env, live, doubles
):
    api = app_with(settings, engine, base_env, doubles)
    for d in doubles.values():
        d.set(BTC="10000000")  # 1e9 BTC at 1e7 USD: 1.5e18 JPY, past payments.amount
    product = api.post(
        f"{API}/products",
        json={
            "name": "Everything",
            "price": 1000000000,
            "currency_type": "CRYPTO",
            "token": "BTC",
            "network": "BITCOIN_REGTEST",
        },
        headers=live.headers("live"),
    )
    assert product.status_code == 201, product.get_data(as_text=True)
    pid = product.get_json()["data"]["id"]
    r = pay(api, live, product_id=pid, network="BITCOIN_REGTEST", token="BTC", currency="JPY")
    error = assert_error(r, 400, "VALIDATION_ERROR")
    assert "largest amount" in error["message"] and error["details"][0]["field"] == "product_id"
    r = pay(api, live, product_id=pid, network="BITCOIN_REGTEST", token="BTC")  # in USD: 1e16, also too much
    assert_error(r, 400, "VALIDATION_ERROR")
    page = api.get(f"/products/{pid}")
    from tests.support.dashboard import csrf_of

    bought = api.post(f"/products/{pid}", data={"csrf_token": csrf_of(page)})
    assert bought.status_code == 422 and "largest amount" in bought.get_data(as_text=True)


# ---- the settler reads the cache --------------------------------------------------------------


def test_the_settler_asks_no_rate_source_while_its_transaction_holds_the_payment(
    settings, engine, base_env, sessions, live, doubles, caplog
):
    api = app_with(settings, engine, base_env, doubles)
    p = created(pay(api, live, amount=30, token="ETH"))
    with unit_of_work(sessions) as s:  # the lock ran out a minute ago
        s.execute(
            sa.update(Payment).where(Payment.id == p["id"]).values(rate_locked_until=utcnow() - timedelta(minutes=1))
        )
    asked_while_locked: list[bool] = []
    one_at_a_time = threading.Lock()  # the three sources are asked at once: their checks must not lock each other

    def row_locked() -> None:  # is a transaction holding the payment's row while a source is asked?
        with one_at_a_time, engine.connect() as conn:
            try:
                conn.execute(sa.text("SELECT 1 FROM payments WHERE id = :id FOR UPDATE NOWAIT"), {"id": p["id"]})
                asked_while_locked.append(False)
            except sa.exc.OperationalError as exc:
                assert getattr(exc.orig, "pgcode", None) == "55P03", exc  # lock_not_available
                asked_while_locked.append(True)
            conn.rollback()

    for d in doubles.values():
        d.set(ETH="2000")
        d.on_request = row_locked
    rates = make_rates(settings.with_(**settings_for(doubles)))
    caplog.set_level(logging.INFO, logger="kassa.bus")
    with private_topology(settings.rabbitmq_url) as (_prefix, topo):
        publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
        with running_settler(settings, topo, sessions, rates=rates):
            publisher.publish_batch([report(p, TransferStatus.CONFIRMED, 10**16, 1).to_message()])
            until(lambda: shown(api, live, p)["status"] != "PENDING", message="the report settled")
        publisher.close()
    after = shown(api, live, p)
    assert after["status"] == "PARTIALLY_PAID" and after["arrival_exchange_rate"] == "2000"
    assert asked_while_locked and not any(asked_while_locked), asked_while_locked
    fetched = [r.getMessage() for r in caplog.records if "outside the transaction" in r.getMessage()]
    failed = [r.getMessage() for r in caplog.records if r.name == "kassa.bus" and "failed (attempt" in r.getMessage()]
    assert fetched and not failed  # the rate was fetched with the batch rolled back; no attempt spent


# ---- funds held in the mempool -----------------------------------------------------------------


def btc_payment(api, live) -> dict:
    p = created(pay(api, live, amount=60, token="BTC", network="BITCOIN_REGTEST"))
    assert p["crypto_amount"] == "0.001"
    return p


def settle_one(sessions, rates, r) -> None:
    settle_with_rates(sessions, r, rates)


def backdate(sessions, p, *, lock_ended_ago: timedelta, seen_ago: timedelta) -> None:
    now = utcnow()
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Payment).where(Payment.id == p["id"]).values(rate_locked_until=now - lock_ended_ago))
        s.execute(sa.update(Transfer).where(Transfer.payment_id == p["id"]).values(created_at=now - seen_ago))


@pytest.mark.parametrize(
    "lock_ended_ago, seen_ago, status, arrival",
    [
        (timedelta(hours=3), timedelta(hours=3, minutes=5), "PARTIALLY_PAID", "40000"),  # held for hours
        (timedelta(minutes=10), timedelta(minutes=15), "COMPLETED", None),  # confirmed within the grace
    ],
)
def test_funds_seen_in_the_mempool_within_the_lock_keep_the_locked_rate_for_a_bounded_grace(
    settings, engine, base_env, sessions, live, doubles, lock_ended_ago, seen_ago, status, arrival
):
    api = app_with(settings, engine, base_env, doubles)
    p = btc_payment(api, live)
    rates = make_rates(settings.with_(**settings_for(doubles)))
    tx = tx_hash()
    settle_one(sessions, rates, report(p, TransferStatus.SEEN, 100_000, 0, tx=tx))  # within the lock
    assert shown(api, live, p)["transaction_hash"] == tx  # detected, waiting for its confirmation
    backdate(sessions, p, lock_ended_ago=lock_ended_ago, seen_ago=seen_ago)
    for d in doubles.values():
        d.set(BTC="40000")  # the price fell while the transaction sat unconfirmed
    rates = make_rates(settings.with_(**settings_for(doubles)))
    settle_one(sessions, rates, report(p, TransferStatus.CONFIRMED, 100_000, 1, tx=tx))
    after = shown(api, live, p)
    assert after["status"] == status and after["arrival_exchange_rate"] == arrival
    assert after["exchange_rate"] == "60000"


def test_funds_seen_after_the_lock_keep_their_arrival_rate_only_for_the_grace(
    settings, engine, base_env, sessions, live, doubles
):
    api = app_with(settings, engine, base_env, doubles)
    p = btc_payment(api, live)
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment).where(Payment.id == p["id"]).values(rate_locked_until=utcnow() - timedelta(hours=4))
        )
    rates = make_rates(settings.with_(**settings_for(doubles)))
    tx = tx_hash()
    settle_one(sessions, rates, report(p, TransferStatus.SEEN, 100_000, 0, tx=tx))  # valued at 60000 on arrival
    backdate(sessions, p, lock_ended_ago=timedelta(hours=4), seen_ago=timedelta(hours=3))
    for d in doubles.values():
        d.set(BTC="40000")
    rates = make_rates(settings.with_(**settings_for(doubles)))
    settle_one(sessions, rates, report(p, TransferStatus.CONFIRMED, 100_000, 1, tx=tx))
    after = shown(api, live, p)
    assert after["status"] == "PARTIALLY_PAID" and after["arrival_exchange_rate"] == "40000"
