"""kassa-client's refund methods (DESIGN §8) over real HTTP. The API does not serve
refunds yet, so a recording server answers in the documented shape: these tests hold
the requests the client sends (method, path, exact body) and its reading of the refund
object. Once the API serves refunds, tests against the stack take their place."""

from __future__ import annotations

import json
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler

import pytest

from kassa_client import ConflictError, Kassa, Refund
from tests.support.receiver import Server

REFUND = {
    "id": "5d1c2f0e-0000-4000-8000-000000000001",
    "payment_id": "7KQ2M9XR4T",
    "status": "AWAITING_ADDRESS",
    "amount": "2.5",
    "token": "USDC",
    "network": "BASE",
    "reason": "damaged",
    "claim_url": "http://127.0.0.1:8000/refunds/tok",
    "address": None,
    "transaction_hash": None,
    "created_at": "2026-01-01T00:00:00.000Z",
    "claimed_at": None,
    "completed_at": None,
    "expires_at": "2026-01-31T00:00:00.000Z",
}


@pytest.fixture
def api():
    seen: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append((self.command, self.path, body))
            status, data = 200, REFUND
            if self.path.endswith("/refunds") and self.command == "POST":
                status = 201
            elif self.path.endswith("/refunds"):
                data = [REFUND]
            elif self.path.endswith("/cancel"):
                status, data = 409, None
            payload = (
                {"success": True, "statusCode": status, "data": data}
                if data is not None
                else {
                    "success": False,
                    "statusCode": 409,
                    "error": {"code": "CONFLICT", "status": 409, "message": "already COMPLETED", "details": []},
                }
            )
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with Kassa("kassa_test_x", base_url=f"http://127.0.0.1:{server.server_port}/v1/api", max_retries=0) as kassa:
        yield kassa, seen
    server.shutdown()
    server.server_close()


def test_create_sends_the_exact_amount_and_reads_the_refund(api):
    kassa, seen = api
    refund = kassa.refunds.create("7KQ2M9XR4T", amount=Decimal("2.50"), reason="damaged")
    assert seen == [("POST", "/v1/api/payments/7KQ2M9XR4T/refunds", b'{"amount":2.50,"reason":"damaged"}')]
    assert isinstance(refund, Refund) and refund.amount == Decimal("2.5") and refund.address is None
    assert refund.expires_at.isoformat() == "2026-01-31T00:00:00+00:00"


def test_a_full_refund_sends_no_amount(api):
    kassa, seen = api
    kassa.refunds.create("7KQ2M9XR4T")
    assert seen[-1][2] == b"{}"


def test_list_get_complete_and_a_refused_cancel(api):
    kassa, seen = api
    assert [r.id for r in kassa.refunds.list("7KQ2M9XR4T")] == [REFUND["id"]]
    assert kassa.refunds.get(REFUND["id"]).status == "AWAITING_ADDRESS"
    kassa.refunds.complete(REFUND["id"], "0xabc")
    with pytest.raises(ConflictError):
        kassa.refunds.cancel(REFUND["id"])
    assert [(m, p) for m, p, _ in seen] == [
        ("GET", "/v1/api/payments/7KQ2M9XR4T/refunds"),
        ("GET", f"/v1/api/refunds/{REFUND['id']}"),
        ("POST", f"/v1/api/refunds/{REFUND['id']}/complete"),
        ("POST", f"/v1/api/refunds/{REFUND['id']}/cancel"),
    ]
    assert json.loads(seen[2][2]) == {"transaction_hash": "0xabc"}
