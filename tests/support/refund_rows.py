"""Refunds on the real database without the API, for the focused tests of the refund modules
(``refunds.addresses``, ``refunds.transitions``, ``refunds.payouts``): one migrated database
per test run (``database_url``), each test in a transaction rolled back at its end (the
``db`` fixture of tests/integration/refunds/conftest.py),
a merchant and a payment with confirmed funds as rows, and what the outbox holds. Cheap
enough to run once per mutant (docs/mutation-testing.md)."""

from __future__ import annotations

import json
import secrets
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sqlalchemy as sa
from eth_utils import to_checksum_address
from sqlalchemy.orm import Session

from kassa_common.accounts import merchants
from kassa_common.ids import new_short_id
from kassa_common.models import ChainCursor, Event, Payment, Refund, Transfer
from kassa_common.owner import Owner
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow

EIP55 = "0x52908400098527886E0F7030069857D2E4169EE7"  # EIP-55's own example


def new_address() -> str:
    return "0x" + secrets.token_hex(20)


def wallet() -> str:
    """A customer's address of the test's own, EIP-55: other tests commit refunds claimed to
    their addresses, whose tags and payouts must not meet this test's."""
    return to_checksum_address(new_address())


def watcher_at(db: Session, network: str, height: int | None) -> None:
    """The network's watcher at ``height`` (None: no watcher yet), for this test's transaction."""
    db.execute(sa.delete(ChainCursor).where(ChainCursor.network == network))
    if height is not None:
        db.add(ChainCursor(network=network, block_number=height, confirmed_through=max(0, height - 10)))
    db.flush()


@dataclass
class Paid:
    """A merchant's payment with confirmed funds, and the owner (merchant, mode) it belongs to."""

    payment: Payment
    owner: Owner

    @property
    def ref(self) -> str:
        return str(self.payment.id)


def merchant(db: Session) -> uuid.UUID:
    return merchants.create_merchant(db, f"m-{secrets.token_hex(6)}@example.com", None, "Acme Ltd", True).id


def paid(
    db: Session,
    units: int | None = 15_000_000,
    *,
    test_mode: bool = True,
    network: str = "BASE",
    token: str = "USDC",
    decimals: int = 6,
    merchant_id: uuid.UUID | None = None,
    address: str | None = None,
) -> Paid:
    """A COMPLETED payment of ``token`` on ``network`` that received ``units`` (confirmed; None:
    nothing)."""
    merchant_id = merchant_id or merchant(db)
    now = utcnow()
    p = Payment(
        id=uuid.uuid4(),
        short_id=new_short_id(),
        merchant_id=merchant_id,
        test_mode=test_mode,
        status="COMPLETED",
        amount=Decimal("12.34"),
        token=token,
        network=network,
        decimals=decimals,
        address=address or new_address(),
        checkout_url="https://pay.example.com/c",
        crypto_amount_units=Decimal(12_340_000),
        exchange_rate=Decimal(1),
        required_confirmations=2,
        expires_at=now + timedelta(hours=1),
    )
    db.add(p)
    db.flush()
    if units is not None:
        transfer(db, p, units)
    return Paid(p, Owner(merchant_id, test_mode, 60))


def transfer(
    db: Session, p: Payment, units: int, *, network: str | None = None, token: str | None = None, status=None
) -> None:
    """A transfer to the payment's address (confirmed unless ``status``; ``network``: another
    network's, wrong-network funds)."""
    network = network or p.network
    db.add(
        Transfer(
            payment_id=p.id,
            network=network,
            tx_hash="0x" + secrets.token_hex(32),
            log_index=0,
            position=0,
            token=token or p.token,
            amount_units=Decimal(units),
            status=status or TransferStatus.CONFIRMED,
            counted=network == p.network,
            block_number=100,
            block_hash="0xb1",
            confirmations=2,
        )
    )
    db.flush()


def events(db: Session, refund: Refund) -> list[tuple[str, dict]]:
    """The refund's events in the outbox, oldest first: (type, the refund object it carries)."""
    rows = db.scalars(
        sa.select(Event).where(Event.merchant_id == refund.merchant_id).order_by(Event.created_at, Event.id)
    )
    out = []
    for e in rows:
        data = e.payload.get("data", {}) if isinstance(e.payload, dict) else {}
        if data.get("refund_id") == str(refund.id):
            out.append((e.type, data))
    return out


def fresh(db: Session, refund: Refund) -> Refund:
    """The refund as the database holds it now."""
    db.flush()
    db.expire(refund)
    return db.get(Refund, refund.id)


class TipNode:
    """An EVM node of ``chain_id`` over HTTP whose ``eth_blockNumber`` is ``tip`` (None: an error)."""

    def __init__(self, tip: int | None, chain_id: int = 8453) -> None:
        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                calls = body if isinstance(body, list) else [body]
                node.asked += [c["method"] for c in calls]
                answers = [node.answer(c) for c in calls]
                out = json.dumps(answers if isinstance(body, list) else answers[0]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args) -> None:
                pass

        self.tip, self.chain_id, self.asked = tip, chain_id, []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, call: dict) -> dict:
        result = {"eth_chainId": hex(self.chain_id), "eth_blockNumber": hex(self.tip or 0)}.get(call["method"])
        if result is None or (call["method"] == "eth_blockNumber" and self.tip is None):
            return {"jsonrpc": "2.0", "id": call.get("id"), "error": {"code": -32000, "message": "down"}}
        return {"jsonrpc": "2.0", "id": call.get("id"), "result": result}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
