"""Confirmation → webhook at 100 payments/s: the whole stack as processes (web, relay,
settler, webhook-sender, expirer, chain-watcher) on anvil mining a block every second, a
local receiver; live USDC payments created through the API and paid on anvil at 100/s.
Latency per payment: from the arrival of the block that gives its transfer the required
confirmations (seen by polling the node every 10 ms) to the receiver's answer to its
``payment.completed`` webhook. The report also gives the median time to each stage on the
way, from the database's own timestamps: the settler wrote the event, a relay published it,
the sender's intake made the delivery, the sender started the POST."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

import requests
import sqlalchemy as sa

from bench.common import Bench, Result
from kassa_dev import chain as devchain
from tests.support.anvil import start_chain
from tests.support.bus import private_topology
from tests.support.receiver import Receiver
from tests.support.stack import Stack

TRANSFER = "0xa9059cbb"  # transfer(address,uint256)


class BlockClock:
    """When each block was first seen on the node (polled every 10 ms)."""

    def __init__(self, url: str) -> None:
        self.url, self.arrived, self._stop = url, {}, threading.Event()
        self.http = requests.Session()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            n = int(rpc(self.http, self.url, "eth_blockNumber"), 16)
            now = time.time()
            for h in range(max(self.arrived, default=n - 1) + 1, n + 1):
                self.arrived.setdefault(h, now)
            self._stop.wait(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def rpc(http: requests.Session, url: str, method: str, *params):
    r = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, timeout=30).json()
    if "error" in r:
        raise RuntimeError(f"{method}: {r['error']}")
    return r["result"]


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def pay_all(url: str, payer: str, usdc: str, payments: list[dict], rate: float) -> dict[str, str]:
    """Send each payment's full amount in USDC, ``rate`` transfers per second; payment id → tx hash."""
    http, sent = requests.Session(), {}
    start = time.monotonic()
    for i, p in enumerate(payments):
        time.sleep(max(0.0, start + i / rate - time.monotonic()))
        units = int(Decimal(p["crypto_amount"]) * 10**6)
        data = TRANSFER + p["address"][2:].lower().rjust(64, "0") + format(units, "064x")
        sent[p["id"]] = rpc(
            http, url, "eth_sendTransaction", {"from": payer, "to": usdc, "data": data, "gas": hex(100_000)}
        )
    return sent


STAGES = sa.text("""
    SELECT e.payment_id::text AS payment_id,
           extract(epoch FROM e.created_at) AS settled, extract(epoch FROM e.published_at) AS published,
           extract(epoch FROM d.created_at) AS intake, extract(epoch FROM a.created_at) AS attempt
    FROM events e
    JOIN webhook_deliveries d ON d.event_id = e.id
    JOIN delivery_attempts a ON a.delivery_id = d.id AND a.attempt = 1
    WHERE e.type = 'payment.completed' AND e.payment_id = ANY(CAST(:ids AS uuid[]))
""")


def stage_medians(b: Bench, arrived: dict[str, float]) -> dict[str, float]:
    """Median ms from the confirming block's arrival to each stage (payment id → arrival)."""
    with b.engine(1) as (engine, _), engine.connect() as conn:
        rows = conn.execute(STAGES, {"ids": list(arrived)}).all()
    return (
        {
            stage: round(statistics.median((float(getattr(r, stage)) - arrived[r.payment_id]) * 1000 for r in rows), 1)
            for stage in ("settled", "published", "intake", "attempt")
        }
        if rows
        else {}
    )


def run(b: Bench) -> list[Result]:
    n, rate = (10, 10.0) if b.smoke else (300, 100.0)
    chain = start_chain(block_time=1.0)
    receiver = Receiver()
    clock = BlockClock(chain.url)
    try:
        with private_topology(b.settings().rabbitmq_url) as (prefix, _), tempfile.TemporaryDirectory() as logs:
            env = {
                **b.env(),
                "BUS_PREFIX": prefix,
                "LOCAL_EVM_RPC_URL": chain.url,
                "CHAIN_WATCHER_NETWORKS": "LOCAL_EVM",
                "LOG_LEVEL": "WARNING",
            }
            stack = Stack(env, Path(logs))
            try:
                stack.start_all()
                stack.start("chain-watcher")
                headers = {"X-Api-Key": b.live_key}
                r = requests.post(
                    f"{stack.api}/webhooks",
                    json={"url": receiver.url, "events": ["payment.completed"]},
                    headers=headers,
                    timeout=30,
                )
                assert r.status_code == 201, r.text
                http = requests.Session()
                payments = []
                for _ in range(n):
                    r = http.post(
                        f"{stack.api}/payments",
                        json={"amount": 12.34, "token": "USDC", "network": "LOCAL_EVM"},
                        headers=headers,
                        timeout=30,
                    )
                    assert r.status_code == 201, r.text
                    payments.append(r.json()["data"])
                time.sleep(3)  # payment.created reaches the watcher's list (a late address is backfilled anyway)
                sent = pay_all(chain.url, chain.accounts[0], chain.tokens["USDC"], payments, rate)
                wait_for(
                    lambda: len(receiver.events("payment.completed")) >= n,
                    60 if b.smoke else 180,
                    f"{n} payment.completed webhooks\n{stack.logs()}",
                )
            finally:
                stack.stop_all()
        hits = {h.json["data"]["payment_id"]: h for h in receiver.events("payment.completed")}
        required = next(p["required_confirmations"] for p in payments)
        latencies, arrived = [], {}
        for pid, tx in sent.items():
            mined = int(rpc(clock.http, chain.url, "eth_getTransactionReceipt", tx)["blockNumber"], 16)
            arrived[pid] = clock.arrived[mined + required - 1]
            latencies.append(hits[pid].at - arrived[pid])
        stages = stage_medians(b, arrived)
    finally:
        clock.stop()
        receiver.close()
        devchain.stop_anvil(chain.proc)
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    extra = {"payments": n, "payments_per_second": rate, "max_ms": latencies[-1] * 1000, "stage_p50_ms": stages}
    return [
        Result(
            "confirm_to_webhook_p50",
            f"confirmation → webhook p50, {n} payments at {rate:.0f}/s on anvil",
            "ms",
            p50,
            "< 200 ms",
            p50 < 200,
            extra=extra,
        ),
        Result(
            "confirm_to_webhook_p99",
            f"confirmation → webhook p99, {n} payments at {rate:.0f}/s on anvil",
            "ms",
            p99,
            "< 1 s",
            p99 < 1000,
            extra=extra,
        ),
    ]
