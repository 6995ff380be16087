"""``make chaos``: the proof of DESIGN §7's "nothing lost" on a stack that is being broken.

Every process of the Procfile runs under a restart loop (two settlers, two expirers and two
webhook senders side by side) on a PostgreSQL and a RabbitMQ that this run starts for itself,
on their own ports and data directories, so it can crash them by pid without touching the
machine's shared servers. While a steady stream of payments comes in (test-mode ones that
complete through the settler path, and LOCAL_EVM ones paid on anvil), it SIGKILLs every
process type at random, takes PostgreSQL and RabbitMQ down for 5 s and for 60 s each, and
has the merchant's webhook receiver answer 503 for a while. Then it waits for the stack to
go quiet and checks what the design promises: every payment created is COMPLETED exactly
once, every transition event reached the receiver, signed, under one event id, the outbox
is drained, the dead-letter queues are empty and nothing was counted twice. Any violation
is printed, with the tails of the logs of the processes concerned, and the exit status is 1.

    python -m kassa_dev.chaos            # the full run, ~10 minutes
    python -m kassa_dev.chaos --short    # one kill per process type, 5 s outages (~2 minutes)

The harness is in the development package, beside ``make run``'s launcher, because it is
tooling: the services never import it. ``make test`` runs the short version
(tests/e2e/test_chaos_short.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
import sqlalchemy as sa
from web3 import Web3

from kassa_common import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.db import ensure_database, make_engine, make_session_factory, unit_of_work
from kassa_common.messaging import admin, topology
from kassa_common.migrate import upgrade
from kassa_common.models import Event, Payment, Transfer, WebhookDelivery
from kassa_common.webhooks.signing import SignatureError, verify_signature
from kassa_dev import chain, procfile
from kassa_dev.instances import PrivatePostgres, PrivateRabbit, free_port

# How many of each process run side by side: the ones DESIGN §1 says scale horizontally are
# doubled, so a kill always hits one of two competitors (SKIP LOCKED, leases, advisory locks).
INSTANCES = {"settler": 2, "expirer": 2, "webhook-sender": 2}
# Which processes a failed check points at: their log tails are printed with it.
SUSPECTS = {
    "payments": ("settler", "expirer", "chain-watcher", "relay", "web"),
    "events": ("settler", "expirer", "relay"),
    "webhooks": ("webhook-sender", "relay"),
    "outbox": ("relay",),
    "queues": ("settler", "webhook-sender", "notifier"),
    "transfers": ("chain-watcher", "settler"),
}
STALLED_SECONDS = 120  # quiescence: give up once nothing has changed for this long
WEBHOOK_RETRY_SCHEDULE = "1,2,4,8,15,30,30,30,30,30,30,30"  # outlasts every receiver outage of the run


def log(message: str) -> None:
    print(f"chaos: {message}", flush=True)


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a process log, without pika's own connection chatter (a
    dozen lines per refused reconnect, which would crowd out what the process said)."""
    try:
        kept = [line for line in path.read_text(errors="replace").splitlines() if '"logger": "pika.' not in line]
    except OSError as exc:
        return f"({exc})"
    return "\n".join(kept[-lines:])


# --- the merchant's webhook receiver ---------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    event_id: str
    event_type: str
    payment_id: str | None
    signature_ok: bool
    at: float


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default 5 drops a burst of new connections' SYNs for 1 s, 3 s…


class Receiver:
    """The merchant's endpoint: records every delivery it accepts (event id, type, payment,
    whether the signature verifies against the endpoint's secret) and, while ``down``,
    answers 503 without recording anything, as a merchant's server in trouble would."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.refused = 0
        self.down = threading.Event()
        self.secrets: dict[bool, str] = {}  # test_mode → the endpoint's signing secret
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:  # a sender killed mid-request delivered nothing
                    self.close_connection = True
                    return
                status = outer._record(dict(self.headers), body)
                reply = b"ok" if status == 200 else b"down"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _record(self, headers: dict[str, str], body: bytes) -> int:
        if self.down.is_set():
            with self._lock:
                self.refused += 1
            return 503
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        secret = self.secrets.get(bool(doc.get("test_mode")), "")
        try:
            ok = verify_signature(secret, headers.get("X-Kassa-Signature", ""), body)
        except SignatureError:
            ok = False
        data = doc.get("data") or {}
        delivery = Delivery(
            str(doc.get("id") or headers.get("X-Kassa-Event-Id")),
            str(doc.get("event")),
            data.get("payment_id"),
            ok,
            time.time(),
        )
        with self._lock:
            self.deliveries.append(delivery)
        return 200

    def all(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the processes, each under a restart loop ------------------------------------------------


class Supervised:
    """One process instance restarted whenever it dies (killed by us or not), its output
    appended to one log file across restarts."""

    def __init__(self, name: str, index: int, argv: list[str], env: dict[str, str], cwd: Path, log_dir: Path) -> None:
        self.name, self.index, self.argv, self.env, self.cwd = name, index, argv, env, cwd
        self.log = log_dir / f"{name}-{index}.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.unexpected_exits = 0  # deaths the harness did not cause
        self._killed_by_us = False
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"supervise-{name}-{index}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        backoff = 0.5
        while not self._stopping.is_set():
            with self._lock, open(self.log, "ab") as out:
                out.write(f"=== chaos: start #{self.starts + 1} at {time.strftime('%H:%M:%S')}\n".encode())
                out.flush()
                self.proc = subprocess.Popen(
                    self.argv, cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
                self.starts += 1
                self._killed_by_us = False
            started = time.monotonic()
            code = self.proc.wait()
            if self._stopping.is_set():
                return
            with open(self.log, "ab") as out:
                out.write(
                    f"=== chaos: exited with {code} at {time.strftime('%H:%M:%S')}"
                    f"{' (SIGKILL by the harness)' if self._killed_by_us else ''}\n".encode()
                )
            if not self._killed_by_us:
                self.unexpected_exits += 1
            backoff = 0.5 if time.monotonic() - started > 10 else min(backoff * 2, 5.0)
            self._stopping.wait(backoff)

    def sigkill(self) -> None:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                self._killed_by_us = True
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        except ProcessLookupError:
            pass


# --- the load: a steady stream of payments ---------------------------------------------------


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
            payment = self._create(http, key, body)
            with self._lock:
                self.created[payment["id"]] = mode
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


# --- the run ---------------------------------------------------------------------------------


@dataclass
class Plan:
    seconds: float
    test_per_second: float
    live_per_second: float
    kills_per_type: int
    outages: list[tuple[str, float]]  # ("postgres" | "rabbitmq" | "receiver", seconds down)
    quiesce_timeout: float


def plan_for(args) -> Plan:
    if args.short:
        return Plan(
            seconds=args.seconds or 50,
            test_per_second=0.6,
            live_per_second=0.3,
            kills_per_type=1,
            outages=[("postgres", 5), ("rabbitmq", 5), ("receiver", 10)],
            quiesce_timeout=240,
        )
    return Plan(
        seconds=args.seconds or 420,
        test_per_second=1.0,
        live_per_second=0.4,
        kills_per_type=3,
        outages=[
            ("postgres", 5),
            ("rabbitmq", 5),
            ("receiver", 30),
            ("postgres", 60),
            ("rabbitmq", 60),
            ("receiver", 20),
        ],
        quiesce_timeout=360,
    )


@dataclass
class Stack:
    root: Path
    log_dir: Path
    pg: PrivatePostgres
    rabbit: PrivateRabbit
    anvil: subprocess.Popen
    database_url: str
    base: str
    processes: dict[str, list[Supervised]] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return f"{self.base}/v1/api"

    def every(self) -> list[Supervised]:
        return [p for group in self.processes.values() for p in group]

    def log_tails(self, names) -> str:
        return "\n".join(
            f"--- {p.log} (last lines)\n{tail(p.log)}" for name in names for p in self.processes.get(name, [])
        )


def process_env(root: Path, database_url: str, rabbit_url: str, rpc_url: str, port: int) -> dict[str, str]:
    """The environment of `make run` (kassa_dev.run.DEV_DEFAULTS) pointed at the private
    servers, with test-mode payments completing after 1 s and a short webhook retry schedule."""
    from kassa_dev.run import DEV_DEFAULTS

    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BUS_PREFIX", "METRICS_PORT")}
    env.update(DEV_DEFAULTS)
    env.update(
        {
            "DATABASE_URL": database_url,
            "RABBITMQ_URL": rabbit_url,
            "LOCAL_EVM_RPC_URL": rpc_url,
            "CHAIN_WATCHER_NETWORKS": "LOCAL_EVM",
            "BIND": f"127.0.0.1:{port}",
            "WEB_CONCURRENCY": "2",
            "CHECKOUT_URL": base,
            "PUBLIC_API_URL": f"{base}/v1/api",
            "DASHBOARD_URL": f"{base}/dashboard",
            "TEST_MODE_COMPLETE_SECONDS": "1",
            "WEBHOOK_RETRY_SCHEDULE": WEBHOOK_RETRY_SCHEDULE,
            "RATE_LIMIT_PER_MINUTE": "1000000",
            "PUBLIC_CREATE_PER_MINUTE": "1000000",
            "DB_POOL_SIZE": "4",
            "LOG_LEVEL": "INFO",
        }
    )
    return procfile.with_this_python(env)


def start_stack(root: Path, log_dir: Path) -> Stack:
    from kassa_sweeper.deploy import deploy_factory
    from kassa_sweeper.txs import Signer

    pg, rabbit, anvil = PrivatePostgres(max_connections=300), PrivateRabbit(), None
    try:
        pg.start()
        log(f"private PostgreSQL on port {pg.port} (data {pg.data})")
        rabbit.start()
        log(f"private RabbitMQ on port {rabbit.port} (node {rabbit.nodename}, dir {rabbit.dir})")
        database_url = pg.url("kassa_chaos")
        ensure_database(database_url)
        upgrade(database_url)
        rpc_port = free_port()
        anvil = chain.start_anvil(rpc_port, block_time=1, repo_root=root)
        rpc_url = f"http://127.0.0.1:{rpc_port}"
        w3 = Web3(Web3.HTTPProvider(rpc_url))
        chain.deploy_dev_tokens(w3, repo_root=root)
        deploy_factory(w3, Signer(chain.SWEEPER_PRIVATE_KEY))
        log(f"anvil on {rpc_url} (1 s blocks), dev tokens and forwarder factory deployed")
    except BaseException:  # nothing of ours may outlive a failed start
        if anvil is not None:
            chain.stop_anvil(anvil)
        rabbit.remove()
        pg.remove()
        raise
    port = free_port()
    env = process_env(root, database_url, rabbit.url, rpc_url, port)
    stack = Stack(root, log_dir, pg, rabbit, anvil, database_url, f"http://127.0.0.1:{port}")
    for process in procfile.read(root / "Procfile"):
        stack.processes[process.name] = [
            Supervised(process.name, i, process.argv, env, root, log_dir)
            for i in range(1, INSTANCES.get(process.name, 1) + 1)
        ]
    for p in stack.every():
        p.start()
    deadline = time.monotonic() + 90
    while not ready(stack.base):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the API did not become ready\n{stack.log_tails(['web'])}")
        time.sleep(0.3)
    counts = ", ".join(f"{name} ×{len(group)}" for name, group in stack.processes.items())
    log(f"processes up under restart loops: {counts}; web on {stack.base}")
    return stack


def ready(base: str) -> bool:
    try:
        return requests.get(f"{base}/readyz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def set_up_merchant(stack: Stack, receiver: Receiver) -> tuple[str, str]:
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
    for test_mode, key in ((True, test_key), (False, live_key)):
        r = requests.post(f"{stack.api}/webhooks", json={"url": receiver.url}, headers={"X-Api-Key": key}, timeout=15)
        if r.status_code != 201:
            raise RuntimeError(f"registering the webhook endpoint failed: {r.status_code} {r.text}")
        receiver.secrets[test_mode] = r.json()["data"]["secret"]
    return test_key, live_key


class Chaos:
    """The disruptions: SIGKILLs of a random instance of each process type (``kills_per_type``
    times each, in random order at random times over the run), and the outages, one after
    another with equal gaps between them."""

    def __init__(self, stack: Stack, receiver: Receiver, plan: Plan, rng: random.Random) -> None:
        self.stack, self.receiver, self.plan, self.rng = stack, receiver, plan, rng
        self.kills: collections.Counter[str] = collections.Counter()
        self.done_outages: list[str] = []
        self._kills_done = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        names = [name for name in self.stack.processes for _ in range(self.plan.kills_per_type)]
        self.rng.shuffle(names)
        kill_times = sorted(self.rng.uniform(3, self.plan.seconds - 3) for _ in names)
        kills = list(zip(kill_times, names, strict=False))
        outage_total = sum(d for _, d in self.plan.outages)
        gap = max(self.plan.seconds - outage_total, 0) / (len(self.plan.outages) + 1)
        outage_at, t = [], gap
        for kind, seconds in self.plan.outages:
            outage_at.append((t, kind, seconds))
            t += seconds + gap
        threading.Thread(target=self._kill_loop, args=(start, kills), daemon=True).start()
        for at, kind, seconds in outage_at:
            time.sleep(max(0.0, start + at - time.monotonic()))
            self._outage(kind, seconds)
        time.sleep(max(0.0, start + self.plan.seconds - time.monotonic()))
        self._kills_done.wait()

    def _kill_loop(self, start: float, kills: list[tuple[float, str]]) -> None:
        try:
            for at, name in kills:
                time.sleep(max(0.0, start + at - time.monotonic()))
                victim = self.rng.choice(self.stack.processes[name])
                victim.sigkill()
                self.kills[name] += 1
                log(f"SIGKILL {victim.name}-{victim.index}")
        finally:
            self._kills_done.set()

    def _outage(self, kind: str, seconds: float) -> None:
        log(f"{kind} down for {seconds:g} s")
        began = time.monotonic()
        if kind == "receiver":
            self.receiver.down.set()
            time.sleep(seconds)
            self.receiver.down.clear()
        else:
            server = self.stack.pg if kind == "postgres" else self.stack.rabbit
            server.kill()
            time.sleep(seconds)
            server.start()
        took = time.monotonic() - began
        self.done_outages.append(f"{kind} {seconds:g} s")
        log(f"{kind} back after {took:.1f} s")


# --- quiescence and the checks ---------------------------------------------------------------


def queue_depths(stack: Stack) -> list[admin.QueueDepth]:
    return admin.queue_depths(stack.rabbit.url, topology.named(""))


def quiet(stack: Stack, sessions, receiver: Receiver) -> str | None:
    """None once nothing is left to do; otherwise what is still moving."""
    with sessions() as s:
        open_payments = s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.status != "COMPLETED"))
        outbox = s.scalar(sa.select(sa.func.count()).select_from(Event).where(Event.published_at.is_(None)))
        pending = s.scalar(
            sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status == "PENDING")
        )
        event_ids = set(s.scalars(sa.select(Event.id).where(Event.type.like("payment.%"))))
    undelivered = len(event_ids - {d.event_id for d in receiver.all()})
    busy = [f"{d.name} {d.messages}" for d in queue_depths(stack) if d.messages]
    state = [
        f"{open_payments} payments not completed" if open_payments else "",
        f"{outbox} outbox rows" if outbox else "",
        f"{pending} deliveries pending" if pending else "",
        f"{undelivered} events not received" if undelivered else "",
        ", ".join(busy),
    ]
    state = [x for x in state if x]
    return "; ".join(state) if state else None


def wait_quiet(stack: Stack, sessions, receiver: Receiver, timeout: float) -> str | None:
    """None once the stack is quiet; what is left if it is not after ``timeout``, or once
    nothing has moved for ``STALLED_SECONDS`` (longer than a webhook delivery's lease and
    the longest retry wait: what is stuck then stays stuck)."""
    deadline = time.monotonic() + timeout
    last_said, last_state, since = 0.0, None, time.monotonic()
    while True:
        try:
            state = quiet(stack, sessions, receiver)
        except Exception as exc:  # noqa: BLE001 - a server may still be recovering
            state = f"not answering yet ({exc.__class__.__name__})"
        if state is None:
            return None
        if state != last_state:
            last_state, since = state, time.monotonic()
        if time.monotonic() > deadline or time.monotonic() - since > STALLED_SECONDS:
            return state
        if time.monotonic() - last_said > 15:
            log(f"waiting for quiescence: {state}")
            last_said = time.monotonic()
        time.sleep(2)


def check(stack: Stack, sessions, traffic: Traffic, receiver: Receiver, chaos: Chaos) -> list[tuple[str, str]]:
    """Print the counts; return the violations as (suspects key, what)."""
    violations: list[tuple[str, str]] = []
    with sessions() as s:
        payments = s.execute(
            sa.select(
                Payment.id,
                Payment.status,
                Payment.test_mode,
                Payment.crypto_amount_units,
                Payment.amount_received_units,
            )
        ).all()
        events = s.execute(sa.select(Event.id, Event.type, Event.payment_id, Event.published_at)).all()
        transfers = s.execute(
            sa.select(
                Transfer.payment_id,
                Transfer.network,
                Transfer.tx_hash,
                Transfer.log_index,
                Transfer.status,
                Transfer.counted,
            )
        ).all()
        failed_deliveries = s.scalar(
            sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status != "SUCCEEDED")
        )
    in_db = {str(p.id): p for p in payments}
    by_status = collections.Counter(p.status for p in payments)

    # payments: everything the API acknowledged exists, and every payment completed
    lost = sorted(set(traffic.created) - set(in_db))
    if lost:
        violations.append(("payments", f"{len(lost)} payments acknowledged by the API are missing: {lost[:5]}"))
    unfinished = [pid for pid, p in in_db.items() if p.status != "COMPLETED"]
    if unfinished:
        violations.append(
            ("payments", (f"{len(unfinished)} payments not COMPLETED ({dict(by_status)}): {unfinished[:5]}"))
        )
        with_transfer = {str(t.payment_id) for t in transfers}
        unseen = [pid for pid in unfinished if pid in traffic.paid and pid not in with_transfer]
        if unseen:  # paid on the chain, yet no transfer recorded: the watcher never reported it
            violations.append(
                (
                    "transfers",
                    (
                        f"{len(unseen)} of them were paid on anvil but no transfer was recorded, "
                        f"e.g. payment {unseen[0]} paid by {traffic.paid[unseen[0]]}"
                    ),
                )
            )
    unpaid = [pid for pid, kind in traffic.created.items() if kind == "live" and pid not in traffic.paid]
    if unpaid:
        violations.append(("payments", f"{len(unpaid)} live payments were never paid on anvil (harness)"))

    # transition events: one event id per (payment, transition); one payment.completed each
    per_transition = collections.defaultdict(set)
    for e in events:
        if e.payment_id is not None:
            per_transition[(str(e.payment_id), e.type)].add(e.id)
    doubled = {k: v for k, v in per_transition.items() if len(v) > 1}
    if doubled:
        (pid, kind), ids = next(iter(doubled.items()))
        violations.append(
            ("events", (f"{len(doubled)} transitions have several event ids, e.g. {kind} of {pid}: {sorted(ids)}"))
        )
    completed = collections.Counter(str(e.payment_id) for e in events if e.type == "payment.completed")
    no_completed = [pid for pid in in_db if completed[pid] == 0]
    if no_completed:
        violations.append(
            ("events", (f"{len(no_completed)} payments without a payment.completed event: {no_completed[:5]}"))
        )
    twice = [pid for pid, n in completed.items() if n > 1]
    if twice:
        violations.append(("events", f"{len(twice)} payments with several payment.completed events: {twice[:5]}"))
    outbox_left = sum(1 for e in events if e.published_at is None)
    if outbox_left:
        violations.append(("outbox", f"{outbox_left} events never published (outbox not drained)"))

    # webhooks: every transition event reached the receiver, signed, under its one id
    deliveries = receiver.all()
    received_ids = {d.event_id for d in deliveries}
    payment_events = {e.id: e for e in events if e.type.startswith("payment.")}
    missing = sorted(set(payment_events) - received_ids)
    if missing:
        violations.append(
            (
                "webhooks",
                (f"{len(missing)} events never delivered: {[(m, payment_events[m].type) for m in missing[:5]]}"),
            )
        )
    unknown = sorted(received_ids - set(payment_events))
    if unknown:
        violations.append(
            ("webhooks", (f"{len(unknown)} deliveries of event ids that are not in the events table: {unknown[:5]}"))
        )
    bad_signatures = [d for d in deliveries if not d.signature_ok]
    if bad_signatures:
        violations.append(
            ("webhooks", (f"{len(bad_signatures)} deliveries with an invalid signature, e.g. {bad_signatures[0]}"))
        )
    received_per_transition = collections.defaultdict(set)
    for d in deliveries:
        received_per_transition[(d.payment_id, d.event_type)].add(d.event_id)
    received_doubled = {k: v for k, v in received_per_transition.items() if len(v) > 1}
    if received_doubled:
        (pid, kind), ids = next(iter(received_doubled.items()))
        violations.append(
            (
                "webhooks",
                (
                    f"{len(received_doubled)} transitions arrived under several event ids, e.g. "
                    f"{kind} of {pid}: {sorted(ids)}"
                ),
            )
        )
    if failed_deliveries:
        violations.append(("webhooks", f"{failed_deliveries} webhook deliveries not SUCCEEDED"))

    # queues: nothing parked, nothing left
    depths = queue_depths(stack)
    dlq = {d.name: d.messages for d in depths if d.role == "dlq"}
    if any(dlq.values()):
        violations.append(("queues", f"dead-lettered messages: {dlq}"))
    left = {d.name: d.messages for d in depths if d.role != "dlq" and d.messages}
    if left:
        violations.append(("queues", f"messages left in queues: {left}"))

    # transfers: none recorded twice, none counted twice
    seen = collections.Counter((t.network, t.tx_hash, t.payment_id, t.log_index) for t in transfers)
    recorded_twice = [k for k, n in seen.items() if n > 1]
    if recorded_twice:
        violations.append(("transfers", f"{len(recorded_twice)} transfers recorded twice: {recorded_twice[:3]}"))
    over = [
        pid for pid, p in in_db.items() if p.status == "COMPLETED" and p.amount_received_units != p.crypto_amount_units
    ]
    if over:
        violations.append(
            (
                "transfers",
                (
                    f"{len(over)} payments whose amount received is not exactly the amount "
                    f"paid once (a transfer counted twice or lost): {over[:5]}"
                ),
            )
        )
    counted_per_payment = collections.Counter(str(t.payment_id) for t in transfers if t.counted)
    wrong = [pid for pid in in_db if counted_per_payment[pid] != 1]  # each was paid once, in full
    if wrong:
        violations.append(("transfers", (f"{len(wrong)} payments without exactly one counted transfer: {wrong[:5]}")))

    # the counts
    kinds = collections.Counter(kind for kind in traffic.created.values())
    transition_types = collections.Counter(e.type for e in events if e.type.startswith("payment."))
    other_types = collections.Counter(e.type for e in events if not e.type.startswith("payment."))
    duplicates = len(deliveries) - len(received_ids)
    exits = {p: sum(x.unexpected_exits for x in stack.processes[p]) for p in stack.processes}
    rows = [
        (
            "payments created",
            (
                f"{len(in_db)} (test {kinds['test']}, live {kinds['live']} paid on anvil; "
                f"API acknowledged {len(traffic.created)}, {traffic.create_retries} create retries)"
            ),
        ),
        (
            "payments completed",
            f"{by_status['COMPLETED']} ({', '.join(f'{k} {v}' for k, v in sorted(by_status.items()))})",
        ),
        (
            "transition events",
            (
                f"{len(payment_events)} ({', '.join(f'{k} {v}' for k, v in sorted(transition_types.items()))}; "
                f"other outbox events: {', '.join(f'{k} {v}' for k, v in sorted(other_types.items())) or 'none'})"
            ),
        ),
        (
            "webhook event ids delivered",
            (
                f"{len(received_ids & set(payment_events))} of {len(payment_events)} "
                f"({len(deliveries)} deliveries, {sum(d.signature_ok for d in deliveries)} "
                f"signatures valid, {receiver.refused} refused with 503 while down)"
            ),
        ),
        (
            "duplicate deliveries",
            (
                f"{duplicates} (same event id again: at-least-once; transitions under two "
                f"event ids: {len(received_doubled) + len(doubled)})"
            ),
        ),
        ("completed twice", str(len(twice))),
        (
            "transfers",
            (
                f"{len(transfers)} recorded, {sum(keys.values()) - len(keys)} recorded twice, "
                f"{len(over)} payments over- or under-counted"
            ),
        ),
        ("outbox left", str(outbox_left)),
        ("DLQ depth", f"{sum(dlq.values())} ({', '.join(f'{k} {v}' for k, v in dlq.items())})"),
        ("kills (SIGKILL)", ", ".join(f"{k} {v}" for k, v in sorted(chaos.kills.items()))),
        ("outages", ", ".join(chaos.done_outages)),
        ("exits not caused by the harness", ", ".join(f"{k} {v}" for k, v in exits.items() if v) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        log(f"{k:<{width}}  {v}")
    return violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kassa_dev.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="one kill per process type, 5 s outages (~2 min)")
    parser.add_argument("--seconds", type=float, default=None, help="length of the chaos phase")
    parser.add_argument("--seed", type=int, default=None, help="random seed (printed; repeat a run's order)")
    args = parser.parse_args(argv)
    plan = plan_for(args)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    root = chain.find_repo_root()
    log_dir = Path(tempfile.mkdtemp(prefix="kassa-chaos-"))
    log(f"{'short' if args.short else 'full'} run, seed {seed}, {plan.seconds:g} s of chaos; logs in {log_dir}")
    began = time.monotonic()
    stack: Stack | None = None
    receiver = Receiver()
    traffic: Traffic | None = None
    engine = None
    try:
        stack = start_stack(root, log_dir)
        test_key, live_key = set_up_merchant(stack, receiver)
        w3 = Web3(Web3.HTTPProvider(stack.anvil.rpc_url))
        traffic = Traffic(
            stack.api,
            test_key,
            live_key,
            w3,
            chain.dev_token_addresses()["USDC"],
            plan.test_per_second,
            plan.live_per_second,
        )
        traffic.start()
        chaos = Chaos(stack, receiver, plan, rng)
        chaos.run()
        log(f"chaos over; {len(traffic.created)} payments so far, stopping the load")
        traffic.stop()
        engine = make_engine(stack.database_url, pool_size=2)
        sessions = make_session_factory(engine)
        state = wait_quiet(stack, sessions, receiver, plan.quiesce_timeout)
        if state is not None:
            log(f"not quiet (timeout {plan.quiesce_timeout:g} s, or nothing moved for {STALLED_SECONDS} s): {state}")
        violations = check(stack, sessions, traffic, receiver, chaos)
        if state is not None and not violations:
            violations.append(("payments", f"the stack did not go quiet: {state}"))
        log(f"took {time.monotonic() - began:.0f} s; logs in {log_dir}")
        if violations:  # the log tails first, so that the violations end the output
            suspects = dict.fromkeys(name for key, _ in violations for name in SUSPECTS[key])
            print(stack.log_tails(suspects), flush=True)
            for _key, what in violations:
                log(f"VIOLATION: {what}")
            log(
                f"FAILED: {len(violations)} violations; the last lines of {', '.join(suspects)} are above "
                f"(logs in {log_dir})"
            )
            return 1
        log("OK: nothing lost, nothing parked, nothing duplicated")
        return 0
    finally:
        if traffic is not None:
            traffic.stopping.set()  # the load threads end with the run
        if engine is not None:
            engine.dispose()
        receiver.close()
        if stack is not None:
            for p in stack.every():
                p.stop()
            chain.stop_anvil(stack.anvil)
            for server, name in ((stack.pg, "postgres.log"), (stack.rabbit, "rabbitmq.log")):
                if server.log.exists():
                    shutil.copy(server.log, log_dir / name)
                server.remove()


if __name__ == "__main__":
    sys.exit(main())
