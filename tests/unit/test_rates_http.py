"""The HTTP rate provider against a local HTTP server."""
from __future__ import annotations

import json
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kassa_common.chains.rates import RateUnavailable
from kassa_common.chains.rates_http import HttpRates


class PriceServer:
    def __init__(self) -> None:
        self.prices = {"ETH": "3012.55"}
        self.status, self.delay, self.hits = 200, 0.0, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.hits += 1
                time.sleep(outer.delay)
                symbol = self.path.strip("/").split("/")[-1]
                body = json.dumps({"data": {"amount": outer.prices.get(symbol, "nope")}}).encode()
                try:
                    self.send_response(outer.status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/price/{{symbol}}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    s = PriceServer()
    yield s
    s.server.shutdown()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_reads_the_rate_and_caches_it_for_the_ttl(server):
    clock = Clock()
    rates = HttpRates(server.url, ttl=60, max_age=300, clock=clock)
    assert rates.usd_rate("eth") == Decimal("3012.55")
    assert rates.usd_rate("ETH") == Decimal("3012.55") and server.hits == 1
    clock.now += 61
    server.prices["ETH"] = "3100"
    assert rates.usd_rate("ETH") == Decimal("3100") and server.hits == 2


def test_stablecoins_are_one_dollar_without_asking(server):
    assert HttpRates(server.url).usd_rate("USDC") == Decimal(1) and server.hits == 0


def test_a_failed_refresh_serves_a_rate_younger_than_max_age_then_gives_up(server):
    clock = Clock()
    rates = HttpRates(server.url, ttl=60, max_age=300, clock=clock)
    rates.usd_rate("ETH")
    server.status = 503
    clock.now += 120
    assert rates.usd_rate("ETH") == Decimal("3012.55")
    clock.now += 200
    with pytest.raises(RateUnavailable):
        rates.usd_rate("ETH")


def test_unknown_symbols_and_garbage_are_unavailable(server):
    with pytest.raises(RateUnavailable):
        HttpRates(server.url).usd_rate("DOGE")


def test_a_slow_source_times_out_as_unavailable(server):
    server.delay = 0.3
    with pytest.raises(RateUnavailable):
        HttpRates(server.url, timeout=0.1).usd_rate("ETH")


def test_a_url_without_a_symbol_placeholder_is_refused():
    with pytest.raises(ValueError):
        HttpRates("http://127.0.0.1/price")
