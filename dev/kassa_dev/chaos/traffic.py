"""The load of a chaos run: a merchant whose webhook endpoints point at the receiver, and a
steady stream of payments (test-mode ones that complete through the settler path, and
LOCAL_EVM ones paid on anvil)."""

from __future__ import annotations

import queue
import secrets
import threading
import time
from dataclasses import dataclass
from decimal import Decimal

import requests
from web3 import Web3

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.db import make_engine, make_session_factory, unit_of_work
from kassa_dev import chain
from kassa_dev.chaos.stack import Stack
from kassa_dev.receiver import Receiver


@dataclass(frozen=True)
class Merchant:
    test_key: str
    live_key: str
    secrets: dict[bool, str]  # test_mode → the signing secret of the mode's webhook endpoint


def set_up_merchant(stack: Stack, receiver: Receiver) -> Merchant:
    """A merchant with a test and a live key, a live EVM wallet (as ``kassa wallet set`` on a
    development stack) and one webhook endpoint per mode, all pointing at the receiver."""
    engine = make_engine(stack.database_url, pool_size=1)
    try:
        with unit_of_work(make_session_factory(engine)) as s:
            merchant = merchants.create_merchant(s, f"chaos-{secrets.token_hex(4)}@example.com", None, "Chaos", True)
            test_key = keys.create_key(s, merchant.id, "test", list(keys.SCOPES)).key
            live_key = keys.create_key(s, merchant.id, "live", list(keys.SCOPES)).key
            merchants.set_wallet(s, merchant.id, "live", "evm", TEST_XPUBS["evm"], allow_test_keys=True)
    finally:
        engine.dispose()
    signing_secrets = {}
    for test_mode, key in ((True, test_key), (False, live_key)):
        r = requests.post(f"{stack.api}/webhooks", json={"url": receiver.url}, headers={"X-Api-Key": key}, timeout=15)
        if r.status_code != 201:
            raise RuntimeError(f"registering the webhook endpoint failed: {r.status_code} {r.text}")
        signing_secrets[test_mode] = r.json()["data"]["secret"]
    return Merchant(test_key, live_key, signing_secrets)


class Traffic:
    """Creates test-mode and LOCAL_EVM payments at steady rates and pays the live ones on
    anvil. A create that fails (the web, the database or the broker down) is retried with the
    same Idempotency-Key until it succeeds, so a payment is never created twice and the list
    of what the API acknowledged is exact."""

    def __init__(
        self,
        api: str,
        test_key: str,
        live_key: str,
        w3: Web3,
        usdc: str,
        test_per_second: float,
        live_per_second: float,
    ) -> None:
        self.api, self.w3, self.usdc = api, w3, usdc
        self.plan = (
            ("test", test_key, test_per_second, {"amount": 12.34, "token": "USDC", "network": "BASE"}),
            ("live", live_key, live_per_second, {"amount": 12.34, "token": "USDC", "network": "LOCAL_EVM"}),
        )
        self.created: dict[str, str] = {}  # payment id → "test" | "live"
        self.asked_at: dict[str, float] = {}  # payment id → time.time() of its create's first attempt
        self.answered_at: dict[str, float] = {}  # payment id → time.time() of its 201
        self.paid: dict[str, str] = {}  # payment id → the transaction hash that paid it
        self.create_retries = 0
        self._to_pay: queue.Queue = queue.Queue()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._create_loop, args=p, daemon=True) for p in self.plan]
        self._threads.append(threading.Thread(target=self._pay_loop, daemon=True))

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop creating; returns once every payment acknowledged so far is paid."""
        self.stopping.set()
        for t in self._threads[:-1]:
            t.join(120)
        self._to_pay.put(None)
        self._threads[-1].join(300)

    def _create_loop(self, mode: str, key: str, rate: float, body: dict) -> None:
        http = requests.Session()
        next_at = time.monotonic()
        while not self.stopping.is_set():
            self.stopping.wait(max(0.0, next_at - time.monotonic()))
            next_at += 1 / rate
            asked = time.time()
            payment = self._create(http, key, body)
            with self._lock:
                self.created[payment["id"]] = mode
                self.asked_at[payment["id"]] = asked
                self.answered_at[payment["id"]] = time.time()
            if mode == "live":
                self._to_pay.put(payment)

    def _create(self, http: requests.Session, key: str, body: dict) -> dict:
        headers = {"X-Api-Key": key, "Idempotency-Key": secrets.token_hex(16)}
        wait = 0.2
        while True:
            try:
                r = http.post(f"{self.api}/payments", json=body, headers=headers, timeout=15)
                if r.status_code == 201:
                    return r.json()["data"]
                if r.status_code < 500 and r.status_code not in (409, 429):
                    raise RuntimeError(f"POST /payments answered {r.status_code}: {r.text[:500]}")
            except requests.RequestException:
                pass
            with self._lock:
                self.create_retries += 1
            time.sleep(wait)  # even when stopping: the answer decides whether the payment exists
            wait = min(wait * 2, 5.0)

    def _pay_loop(self) -> None:
        while (payment := self._to_pay.get()) is not None:
            units = int(Decimal(payment["crypto_amount"]) * 10**6)
            tx = chain.pay(self.w3, to=payment["address"], amount_base_units=units, token_contract=self.usdc)
            with self._lock:
                self.paid[payment["id"]] = tx
