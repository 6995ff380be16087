"""RATES_URL (an operator's own price feed) still prices live payments: it joins the market
sources as ``url``; the rate is locked on the payment with its source."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kassa_api.app import create_app
from tests.support.api import set_live_wallet


def test_a_live_payment_locks_the_rate_of_the_rates_url_feed(settings, engine, merchant, sessions):
    class Prices(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": {"amount": "2500.00" if "/ETH-" in self.path else "1"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Prices)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    set_live_wallet(sessions, merchant.id)
    try:
        url = f"http://127.0.0.1:{server.server_port}/prices/{{symbol}}-USD/spot"
        client = create_app(
            settings.with_(rates={"url": url, "providers": (), "min_sources": 1, "fixed_rates_allow_live": False}),
            engine=engine,
        ).test_client()
        r = client.post(
            "/v1/api/payments",
            json={"amount": 50, "token": "ETH", "network": "LOCAL_EVM"},
            headers=merchant.headers("live"),
        )
        assert r.status_code == 201, r.json
        data = r.json["data"]
        assert data["exchange_rate"] == "2500" and data["crypto_amount"] == "0.02"
        assert data["currency"] == "USD" and data["rate_source"] == "ETH/USD url"
    finally:
        server.shutdown()
        server.server_close()
