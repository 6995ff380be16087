"""The stack a chaos run starts and breaks: a private PostgreSQL and RabbitMQ (their own
ports and data directories, so they can be crashed by pid without touching the machine's
shared servers), anvil with the dev tokens and the forwarder factory, every process of the
Procfile under a restart loop, and the disruptions (SIGKILLs and outages).

With ``ha``: a PostgreSQL primary with a synchronous streaming standby instead of the one
server (``DATABASE_URL`` lists both, ``target_session_attrs=read-write``;
``DATABASE_READ_URL`` prefers the standby) and a three-node RabbitMQ cluster instead of the
one node (``RABBITMQ_URL`` lists the three); the disruptions then include killing the node
leading the queues and killing the primary with the standby promoted (``Failover``)."""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
from web3 import Web3

from kassa_common.db import ensure_database
from kassa_common.messaging import topology
from kassa_common.migrate import upgrade
from kassa_dev import chain, procfile
from kassa_dev.instances import PrivatePostgres, PrivateRabbit, RabbitCluster, free_port
from kassa_dev.receiver import Receiver

# How many of each process run side by side: the ones DESIGN §1 says scale horizontally are
# doubled, so a kill always hits one of two competitors (SKIP LOCKED, leases, advisory locks).
INSTANCES = {"settler": 2, "expirer": 2, "webhook-sender": 2}
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


# --- the processes, each under a restart loop ------------------------------------------------


class Supervised:
    """One process instance restarted whenever it dies (killed by us or not), its output
    appended to one log file across restarts."""

    def __init__(self, name: str, index: int, argv: list[str], env: dict[str, str], cwd: Path, log_dir: Path) -> None:
        self.name, self.index, self.argv, self.env, self.cwd = name, index, argv, env, cwd
        self.log = log_dir / f"{name}-{index}.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.started_at = 0.0  # time.monotonic() of the last start
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
                self.started_at = time.monotonic()
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

    @property
    def running(self) -> bool:
        proc = self.proc
        return proc is not None and proc.poll() is None

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


# --- the stack ------------------------------------------------------------------------------


@dataclass
class Stack:
    root: Path
    log_dir: Path
    pg: PrivatePostgres  # the primary, with ``ha``
    rabbit: PrivateRabbit | RabbitCluster
    anvil: subprocess.Popen
    database_url: str
    base: str
    standby: PrivatePostgres | None = None  # with ``ha``
    processes: dict[str, list[Supervised]] = field(default_factory=dict)

    @property
    def servers(self) -> list[tuple[str, PrivatePostgres | PrivateRabbit]]:
        """Every private server with the name its log is kept under."""
        out: list[tuple[str, PrivatePostgres | PrivateRabbit]] = [("postgres", self.pg)]
        if self.standby is not None:
            out.append(("postgres-standby", self.standby))
        if isinstance(self.rabbit, RabbitCluster):
            out += [(f"rabbitmq-{i}", node) for i, node in enumerate(self.rabbit.nodes, start=1)]
        else:
            out.append(("rabbitmq", self.rabbit))
        return out

    @property
    def api(self) -> str:
        return f"{self.base}/v1/api"

    def every(self) -> list[Supervised]:
        return [p for group in self.processes.values() for p in group]

    def log_tails(self, names) -> str:
        return "\n".join(
            f"--- {p.log} (last lines)\n{tail(p.log)}" for name in names for p in self.processes.get(name, [])
        )


def process_env(
    root: Path, database_url: str, rabbit_url: str, rpc_url: str, port: int, read_url: str | None = None
) -> dict[str, str]:
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
    if read_url:
        env["DATABASE_READ_URL"] = read_url
    return procfile.with_this_python(env)


def start_stack(root: Path, log_dir: Path, *, ha: bool = False) -> Stack:
    from kassa_sweeper.deploy import deploy_factory
    from kassa_sweeper.txs import Signer

    # With a standby, a commit returns once the standby has the WAL too (synchronous_commit is
    # on): promoted, it has every commit an answer reported. Only the primary is started with
    # it, or the promoted standby would wait for a standby it does not have.
    pg = PrivatePostgres(max_connections=300, settings={"synchronous_standby_names": "*"} if ha else None)
    standby = PrivatePostgres.standby_of(pg, max_connections=300) if ha else None
    rabbit: PrivateRabbit | RabbitCluster = RabbitCluster(3) if ha else PrivateRabbit()
    anvil, read_url = None, None
    try:
        pg.start()
        log(f"private PostgreSQL on port {pg.port} (data {pg.data})")
        if standby is not None:
            standby.start()
            log(f"private PostgreSQL standby on port {standby.port}, streaming from {pg.port} (data {standby.data})")
        rabbit.start()
        if isinstance(rabbit, RabbitCluster):
            nodes = ", ".join(f"{node.nodename} on {node.port}" for node in rabbit.nodes)
            log(f"private RabbitMQ cluster of {len(rabbit.nodes)} nodes: {nodes}")
        else:
            log(f"private RabbitMQ on port {rabbit.port} (node {rabbit.nodename}, dir {rabbit.dir})")
        if standby is not None:
            hosts = f"127.0.0.1:{pg.port},127.0.0.1:{standby.port}"
            database_url = f"postgresql://postgres@{hosts}/kassa_chaos?target_session_attrs=read-write"
            read_url = (
                f"postgresql://postgres@127.0.0.1:{standby.port},127.0.0.1:{pg.port}/kassa_chaos"
                "?target_session_attrs=prefer-standby"
            )
        else:
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
        if standby is not None:
            standby.remove()
        pg.remove()
        raise
    port = free_port()
    env = process_env(root, database_url, rabbit.url, rpc_url, port, read_url)
    stack = Stack(root, log_dir, pg, rabbit, anvil, database_url, f"http://127.0.0.1:{port}", standby)
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


FAILOVERS = ("rabbitmq-leader", "postgres-primary")  # the outages of --ha: killed, not started again
# A failover is timed on a steady stack: every process up this long (and the web ready) before
# it, and no SIGKILL until this long after it (the kills due meanwhile wait).
STEADY_SECONDS = 15.0


@dataclass(frozen=True)
class Failover:
    """A server lost for good mid-run (``make chaos --ha``): when (wall clock), and what."""

    kind: str  # "rabbitmq" (the node leading the queues) | "postgres" (the primary; the standby promoted)
    at: float  # time.time() of the SIGKILL
    what: str


class Chaos:
    """The disruptions: SIGKILLs of a random instance of each process type (``kills_per_type``
    times each, in random order at random times over the run), and the outages, one after
    another with equal gaps between them. An outage of kind ``rabbitmq-leader`` or
    ``postgres-primary`` (a cluster's, ``--ha``) is a failover: the server is killed and not
    started again (``Failover``)."""

    def __init__(
        self,
        stack: Stack,
        receiver: Receiver,
        seconds: float,
        kills_per_type: int,
        outages: list[tuple[str, float]],  # ("postgres" | "rabbitmq" | "receiver", seconds down)
        rng: random.Random,
    ) -> None:
        self.stack, self.receiver, self.rng = stack, receiver, rng
        self.seconds, self.kills_per_type, self.outages = seconds, kills_per_type, outages
        self.kills: collections.Counter[str] = collections.Counter()
        self.done_outages: list[str] = []
        self.failovers: list[Failover] = []
        self._hold = threading.Event()  # set while a failover is timed: the SIGKILLs wait
        self._kills_done = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        names = [name for name in self.stack.processes for _ in range(self.kills_per_type)]
        self.rng.shuffle(names)
        kill_times = sorted(self.rng.uniform(3, self.seconds - 3) for _ in names)
        kills = list(zip(kill_times, names, strict=False))
        outage_total = sum(d for _, d in self.outages)
        gap = max(self.seconds - outage_total, 0) / (len(self.outages) + 1)
        outage_at, t = [], gap
        for kind, seconds in self.outages:
            outage_at.append((t, kind, seconds))
            t += seconds + gap
        threading.Thread(target=self._kill_loop, args=(start, kills), daemon=True).start()
        for at, kind, seconds in outage_at:
            time.sleep(max(0.0, start + at - time.monotonic()))
            self._outage(kind, seconds)
        time.sleep(max(0.0, start + self.seconds - time.monotonic()))
        self._kills_done.wait()

    def _kill_loop(self, start: float, kills: list[tuple[float, str]]) -> None:
        try:
            for at, name in kills:
                time.sleep(max(0.0, start + at - time.monotonic()))
                while self._hold.is_set():
                    time.sleep(0.2)
                victim = self.rng.choice(self.stack.processes[name])
                victim.sigkill()
                self.kills[name] += 1
                log(f"SIGKILL {victim.name}-{victim.index}")
        finally:
            self._kills_done.set()

    def _outage(self, kind: str, seconds: float) -> None:
        if kind in FAILOVERS:
            self._hold.set()
            self._wait_steady()
            if kind == "rabbitmq-leader":
                self._kill_rabbitmq_leader()
            else:
                self._fail_over_postgres()
            threading.Timer(STEADY_SECONDS, self._hold.clear).start()
            return
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

    def _wait_steady(self, timeout: float = 120) -> None:
        """Until every process has been up ``STEADY_SECONDS`` and the web answers ``/readyz``
        (a process restarting after a SIGKILL would be timed as the failover)."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            now = time.monotonic()
            if all(p.running and now - p.started_at >= STEADY_SECONDS for p in self.stack.every()) and ready(
                self.stack.base
            ):
                break
            time.sleep(0.5)
        if time.monotonic() - began > 1:
            log(f"waited {time.monotonic() - began:.0f} s for a steady stack before the failover")

    def _kill_rabbitmq_leader(self) -> None:
        """SIGKILL the cluster node leading most of the work queues (by pid); it stays down."""
        cluster = self.stack.rabbit
        assert isinstance(cluster, RabbitCluster)
        names = [q.name for q in topology.named("").queues]
        leaders = collections.Counter(cluster.leaders(names).values())
        if not leaders:
            raise RuntimeError("no queue has a leader")
        nodename, led = leaders.most_common(1)[0]
        node = cluster.node(nodename)
        at = time.time()
        node.kill()
        what = f"node {nodename} (port {node.port}) leading {led} of {len(names)} work queues"
        self.failovers.append(Failover("rabbitmq", at, what))
        self.done_outages.append(f"RabbitMQ {what} killed")
        log(f"SIGKILL RabbitMQ {what}; {len(cluster.live)} nodes left")

    def _fail_over_postgres(self) -> None:
        """SIGKILL the primary (by pid) and promote the standby; the old primary stays down."""
        primary, standby = self.stack.pg, self.stack.standby
        assert standby is not None
        at = time.time()
        primary.kill()
        standby.promote()
        what = f"primary on {primary.port} killed, standby on {standby.port} promoted"
        self.failovers.append(Failover("postgres", at, what))
        self.done_outages.append(f"PostgreSQL {what}")
        log(f"PostgreSQL {what} ({time.time() - at:.1f} s)")
