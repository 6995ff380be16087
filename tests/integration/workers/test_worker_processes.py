"""Every worker of the Procfile, run as the real process with its Procfile command, goes
through the one bootstrap: JSON logs carrying its name, metrics on METRICS_PORT, and a
graceful stop on SIGTERM (exit status 0, after saying so)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import requests

from kassa_dev import procfile
from tests.conftest import fresh_database
from tests.support.anvil import anvil  # noqa: F401  (fixture)
from tests.support.bus import private_topology
from tests.support.stack import free_port
from tests.support.wait import until

ROOT = Path(__file__).resolve().parents[3]
WORKERS = {p.name: p.argv for p in procfile.read(ROOT / "Procfile") if p.name != "web"}
SIGTERM_CAUGHT = 1 << (signal.SIGTERM - 1)


def catches_sigterm(pid: int) -> bool:
    """The process has installed its SIGTERM handler (Linux: SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & SIGTERM_CAUGHT)
    return False


def metrics_answer(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/metrics", timeout=1).ok
    except requests.RequestException:
        return False


@pytest.fixture(scope="module")
def worker_env(base_env):
    with fresh_database("procs_") as url, private_topology(base_env["RABBITMQ_URL"]) as (prefix, _topo):
        yield {
            **base_env,
            "DATABASE_URL": url,
            "BUS_PREFIX": prefix,
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            "CHAIN_WATCHER_NETWORKS": "NO_SUCH_NETWORK",
        }  # no node needed


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def run_then_sigterm(name: str, env: dict[str, str], log_path: Path, ready=lambda: True) -> int:
    """Start ``name`` with its Procfile command, wait until it catches SIGTERM, its metrics
    answer and ``ready()``; then SIGTERM it and return its exit status."""
    port = free_port()
    env = procfile.with_this_python({**os.environ, **env, "METRICS_PORT": str(port)})
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            WORKERS[name], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        until(
            lambda: proc.poll() is not None or (catches_sigterm(proc.pid) and metrics_answer(port) and ready()),
            timeout=30,
            message=f"{name} to start",
        )
        assert proc.poll() is None, log_path.read_text()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            return proc.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} still running 30 s after SIGTERM; its log:\n{log_path.read_text()}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_worker_boots_through_the_bootstrap_and_stops_on_sigterm(name, worker_env, tmp_path):
    log_path = tmp_path / f"{name}.log"
    assert run_then_sigterm(name, worker_env, log_path) == 0, log_path.read_text()
    lines = log_lines(log_path)
    assert lines and {line["process"] for line in lines} == {name}
    assert any(line["msg"] == f"stopping on signal {int(signal.SIGTERM)}" for line in lines)


def test_the_chain_watcher_process_follows_its_network_and_stops_on_sigterm(worker_env, anvil, tmp_path):
    log_path = tmp_path / "chain-watcher.log"
    env = {**worker_env, "LOCAL_EVM_RPC_URL": anvil.url, "CHAIN_WATCHER_NETWORKS": "LOCAL_EVM"}

    def following() -> bool:
        return any(line["msg"].startswith("LOCAL_EVM: active") for line in log_lines(log_path))

    assert run_then_sigterm("chain-watcher", env, log_path, ready=following) == 0, log_path.read_text()
    assert not [line for line in log_lines(log_path) if line["level"] == "ERROR"], log_path.read_text()
