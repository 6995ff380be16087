"""RATES_URL swaps the fixed rates for an HTTP spot-price source; the rate is locked on the payment."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kassa_api.app import create_app


def test_payment_locks_the_rate_of_the_http_provider(settings, engine, merchant):
    class Prices(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"data": {"amount": "2500.00" if "/ETH-" in self.path else "1"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Prices)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/prices/{{symbol}}-USD/spot"
        client = create_app(settings.with_(rates_url=url), engine=engine).test_client()
        r = client.post("/v1/api/payments", json={"amount": 50, "token": "ETH", "network": "ETHEREUM"},
                        headers=merchant.headers())
        assert r.status_code == 201, r.json
        assert r.json["data"]["exchange_rate"] == "2500" and r.json["data"]["crypto_amount"] == "0.02"
    finally:
        server.shutdown()
        server.server_close()
