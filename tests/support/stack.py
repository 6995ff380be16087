"""The whole Kassa stack as real processes on a test database and a private RabbitMQ
topology, for e2e and browser tests.

The processes are the Procfile's, run with its own commands (the one process registry
that `make run` and docker-compose.yml agree with too), except the chain-watcher and the
sweeper: they need a chain node, and the tests that use a chain run them against anvil.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import requests

from kassa_dev import procfile
from tests.support.wait import until

ROOT = Path(__file__).resolve().parents[2]
NEEDS_A_CHAIN_NODE = {"chain-watcher", "sweeper"}
ALL_PROCESSES = {p.name: p.argv for p in procfile.read(ROOT / "Procfile")}
PROCESSES = {name: argv for name, argv in ALL_PROCESSES.items() if name not in NEEDS_A_CHAIN_NODE}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.inbox: Any = None  # the SMTP server's inbox, when the stack has one (tests/support/smtp.py)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = procfile.with_this_python(
            {
                **os.environ,
                **env,
                "BIND": f"127.0.0.1:{self.port}",
                "WEB_CONCURRENCY": "2",
                "CHECKOUT_URL": self.base,
                "PUBLIC_API_URL": f"{self.base}/v1/api",
                "DASHBOARD_URL": f"{self.base}/dashboard",
                "PYTHONUNBUFFERED": "1",
            }
        )
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}

    @property
    def api(self) -> str:
        return f"{self.base}/v1/api"

    def start(self, name: str) -> None:
        """Start one Procfile process (the chain-watcher and sweeper too, once a chain node is set)."""
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - the process writes to it while it runs
        self.procs[name] = subprocess.Popen(
            ALL_PROCESSES[name], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_all(self) -> Stack:
        for name in PROCESSES:
            self.start(name)
        until(self.ready, timeout=30, interval=0.2, message="the API to become ready")
        return self

    def ready(self) -> bool:
        try:
            return requests.get(f"{self.base}/readyz", timeout=1).ok
        except requests.RequestException:
            return False

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, sig)
        proc.wait(15)

    def stop_all(self) -> None:
        for name in list(self.procs):
            proc = self.procs[name]
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        for proc in list(self.procs.values()):
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.log_dir.glob("*.log")))
