"""Local doubles of the market rate sources, over real HTTP, answering in each provider's
real request and response format (Coinbase ``/v2/exchange-rates``, Kraken
``/0/public/Ticker``, CoinGecko ``/simple/price`` and ``/exchange_rates``).

Each double prices what its ``prices`` holds (USD per unit, coins and fiat alike); a test
changes them, or sets ``down`` (HTTP 503) or ``hang`` (answers after the client's timeout),
between requests. ``hits`` counts the requests it answered; ``on_request`` (if set) is called
on each request before it is answered (a test looks at the database while a source is asked).

The fixtures ``doubles`` (the three, started) and ``live`` (a merchant with live wallets) are
imported by the rate test modules, which reach the API with ``app_with``::

    from tests.support.rate_doubles import doubles, live  # noqa: F401  (fixtures)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.api import API, set_live_wallet

KRAKEN_NAMES = {"BTC": "XBT"}  # Kraken's asset codes
KRAKEN_PAIRS = {
    "ETH": "XETHZUSD",
    "XBT": "XXBTZUSD",
    "EUR": "ZEURZUSD",
    "GBP": "ZGBPZUSD",
    "USDC": "USDCUSD",
    "USDT": "USDTZUSD",
    "AUD": "ZAUDZUSD",
}  # the key Kraken answers under, by base
KRAKEN_USD_BASED = {"JPY": "ZUSDZJPY", "CAD": "ZUSDZCAD", "CHF": "USDCHF"}
GECKO_IDS = {
    "bitcoin": "BTC",
    "ethereum": "ETH",
    "usd-coin": "USDC",
    "tether": "USDT",
    "binancecoin": "BNB",
    "polygon-ecosystem-token": "POL",
}
FIAT = {"EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "USD"}


class RateDouble:
    name = "double"

    def __init__(self, prices: dict[str, str]) -> None:
        self.prices = {k: Decimal(v) for k, v in prices.items()}
        self.down = False
        self.hang = 0.0
        self.hits = 0
        self.on_request: Callable[[], None] | None = None
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                double.hits += 1
                if double.on_request is not None:
                    double.on_request()
                if double.hang:
                    time.sleep(double.hang)
                if double.down:
                    return self._send(503, {"message": "service unavailable"})
                url = urlsplit(self.path)
                status, body = double.answer(url.path, {k: v[0] for k, v in parse_qs(url.query).items()})
                self._send(status, body)

            def _send(self, status, body):
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def set(self, **prices: str) -> None:
        self.prices.update({k: Decimal(v) for k, v in prices.items()})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, object]:
        raise NotImplementedError


class CoinbaseDouble(RateDouble):
    """``GET /v2/exchange-rates?currency=ETH`` → ``{"data": {"currency": "ETH", "rates": {"USD": "…", …}}}``."""

    name = "coinbase"

    def answer(self, path, query):
        base = query.get("currency", "USD").upper()
        if path != "/v2/exchange-rates" or (base != "USD" and base not in self.prices):
            return 400, {"errors": [{"id": "invalid_request", "message": "Invalid currency"}]}
        usd = self.prices.get(base, Decimal(1))
        rates = {code: str(usd / price) for code, price in {**self.prices, "USD": Decimal(1)}.items()}
        rates["USD"] = str(usd)
        return 200, {"data": {"currency": base, "rates": rates}}


class KrakenDouble(RateDouble):
    """``GET /0/public/Ticker?pair=ETHUSD`` → ``{"error": [], "result": {"XETHZUSD": {"c": ["…", "…"], …}}}``."""

    name = "kraken"

    def answer(self, path, query):
        pair = query.get("pair", "")
        if path != "/0/public/Ticker":
            return 404, {"error": ["EGeneral:Unknown method"]}
        for base, key in KRAKEN_PAIRS.items():
            symbol = {v: k for k, v in KRAKEN_NAMES.items()}.get(base, base)
            if pair == f"{base}USD" and symbol in self.prices:
                return 200, {"error": [], "result": {key: self._ticker(self.prices[symbol])}}
        for symbol, key in KRAKEN_USD_BASED.items():
            if pair == f"USD{symbol}" and symbol in self.prices:
                return 200, {"error": [], "result": {key: self._ticker(Decimal(1) / self.prices[symbol])}}
        return 200, {"error": ["EQuery:Unknown asset pair"]}

    @staticmethod
    def _ticker(price: Decimal) -> dict:
        p = f"{price:.5f}"
        return {
            "a": [p, "1", "1.000"],
            "b": [p, "2", "2.000"],
            "c": [p, "0.01000000"],
            "v": ["10", "20"],
            "p": [p, p],
            "t": [5, 9],
            "l": [p, p],
            "h": [p, p],
            "o": p,
        }


class CoinGeckoDouble(RateDouble):
    """``GET /simple/price?ids=ethereum&vs_currencies=usd`` → ``{"ethereum": {"usd": 3012.55}}``;
    ``GET /exchange_rates`` → ``{"rates": {"btc": {"value": 1, …}, "usd": {"value": …, "type": "fiat"}, …}}``."""

    name = "coingecko"

    def answer(self, path, query):
        if path == "/simple/price":
            ids = [i for i in query.get("ids", "").split(",") if i]
            return 200, {
                i: {"usd": float(self.prices[GECKO_IDS[i]])}
                for i in ids
                if i in GECKO_IDS and GECKO_IDS[i] in self.prices
            }
        if path == "/exchange_rates":
            btc = self.prices.get("BTC", Decimal(60000))
            rates = {
                "btc": {"name": "Bitcoin", "unit": "BTC", "value": 1.0, "type": "crypto"},
                "usd": {"name": "US Dollar", "unit": "$", "value": float(btc), "type": "fiat"},
            }
            for code in FIAT & set(self.prices):
                rates[code.lower()] = {
                    "name": code,
                    "unit": code,
                    "value": float(btc / self.prices[code]),
                    "type": "fiat",
                }
            return 200, {"rates": rates}
        return 404, {"error": "Not found"}


MARKET = {
    "ETH": "3000",
    "BTC": "60000",
    "USDC": "1.0001",
    "USDT": "0.9998",
    "EUR": "1.08",
    "GBP": "1.27",
    "JPY": "0.0067",
    "CHF": "1.13",
    "CAD": "0.73",
    "AUD": "0.66",
    "POL": "0.5",
    "BNB": "600",
}


def start_all(prices: dict[str, str] | None = None) -> dict[str, RateDouble]:
    prices = prices or MARKET
    return {"coinbase": CoinbaseDouble(prices), "kraken": KrakenDouble(prices), "coingecko": CoinGeckoDouble(prices)}


def settings_for(doubles: dict[str, RateDouble], **overrides) -> dict:
    """``Settings.with_`` overrides pointing the market sources at the doubles (``overrides``:
    more of ``settings.rates``)."""
    rates = {
        "providers": tuple(doubles),
        "coinbase_url": doubles["coinbase"].url,
        "kraken_url": doubles["kraken"].url,
        "coingecko_url": doubles["coingecko"].url,
        "fixed_rates_allow_live": False,
    }
    return {"rates": {**rates, **overrides}}


def settle_with_rates(sessions, r, rates) -> None:
    """Settle report ``r`` as the settler does: in a transaction that reads rates from the
    cache only; a rate missing there is fetched with the transaction rolled back, then the
    report is settled again (``errors.Unprepared``)."""
    from kassa_common.db import unit_of_work
    from kassa_common.errors import Unprepared
    from kassa_common.payments.settle import settle

    for _ in range(3):
        try:
            with unit_of_work(sessions) as s:
                settle(s, r, rates)
            return
        except Unprepared as exc:
            exc.prepare()
    raise AssertionError("the rate was still missing after fetching it")


@pytest.fixture
def doubles():
    """The three doubles at ``MARKET`` prices; answering at once again, then closed, after the test."""
    started = start_all()
    yield started
    for d in started.values():
        d.hang, d.on_request = 0, None
        d.close()


@pytest.fixture
def live(sessions, make_merchant):
    """A merchant with live EVM and Bitcoin wallets (the development stack's published keys)."""
    m = make_merchant()
    set_live_wallet(sessions, m.id, "evm")
    set_live_wallet(sessions, m.id, "bitcoin")
    return m


def app_with(settings, engine, base_env, doubles, **overrides):
    """An API test client pricing from ``doubles`` (``overrides``: more of ``settings.rates``)."""
    from kassa_common.chains.networks import load_registry
    from kassa_api.app import create_app

    networks = load_registry({**base_env, "BITCOIN_REGTEST_RPC_URL": "http://127.0.0.1:9"})  # never asked here
    return create_app(
        settings.with_(networks=networks, **settings_for(doubles, **overrides)), engine=engine
    ).test_client()


def pay(client, merchant, **body):
    """POST /payments on LOCAL_EVM in live mode (``body``: amount, token, currency…)."""
    return client.post(f"{API}/payments", json={"network": "LOCAL_EVM", **body}, headers=merchant.headers("live"))


def created(response) -> dict:
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["data"]
