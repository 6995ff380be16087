"""What every scenario of `make bench` shares: the bench database with a merchant and keys,
free ports, gunicorn and wrk, and the shape of a result."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests
import sqlalchemy as sa

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory, sqlalchemy_url, unit_of_work, with_database
from kassa_common.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Result:
    """One row of the table: ``value`` in ``unit``, against ``reference`` where there is one."""

    name: str
    title: str
    unit: str
    value: float
    target: str
    met: bool
    reference: float | None = None
    reference_title: str | None = None
    ratio: float | None = None
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        out = {
            k: (float(f"{v:.4g}") if k in ("value", "reference", "ratio") and v is not None else v)
            for k, v in self.__dict__.items()
            if k != "extra"
        }
        out.update(self.extra)
        return out


@dataclass
class Bench:
    """The bench database (fresh, migrated, dropped afterwards), one merchant, its keys."""

    admin_url: str
    smoke: bool
    database_url: str = ""
    name: str = ""
    merchant_id: object = None
    test_key: str = ""
    live_key: str = ""
    email: str = ""

    def settings(self, **env: str) -> Settings:
        return Settings.from_env(
            {
                "DATABASE_URL": self.database_url,
                "RABBITMQ_URL": RABBITMQ_URL,
                "KASSA_ENV": "development",
                "FIXED_RATES_ALLOW_LIVE": "true",
                "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
                **env,
            }
        )

    def env(self) -> dict[str, str]:
        """Environment of the processes a scenario starts (the development stack's settings)."""
        return {
            "DATABASE_URL": self.database_url,
            "RABBITMQ_URL": RABBITMQ_URL,
            "KASSA_ENV": "development",
            "FIXED_RATES_ALLOW_LIVE": "true",
            "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
            "RATE_LIMIT_PER_MINUTE": "100000000",
            "LOG_LEVEL": "WARNING",
            "SECRET_KEY": secrets.token_urlsafe(32),
        }

    def new_merchant(self) -> tuple[object, str]:
        """Another merchant with a test key: (id, key), for a scenario that counts its own events."""
        with self.engine(1) as (_, sessions), unit_of_work(sessions) as s:
            m = merchants.create_merchant(s, f"bench-{secrets.token_hex(4)}@example.com", None, "Bench", True)
            return m.id, keys.create_key(s, m.id, "test", list(keys.SCOPES)).key

    @contextmanager
    def engine(self, pool_size: int = 4):
        engine = make_engine(self.database_url, pool_size=pool_size)
        try:
            yield engine, make_session_factory(engine)
        finally:
            engine.dispose()


@contextmanager
def bench_database(admin_url: str, smoke: bool):
    name = f"kassa_bench_{secrets.token_hex(4)}"
    url = with_database(admin_url, name)
    upgrade(url)
    b = Bench(admin_url, smoke, url, name)
    try:
        with b.engine(1) as (_, sessions), unit_of_work(sessions) as s:
            b.email = f"bench-{secrets.token_hex(4)}@example.com"
            m = merchants.create_merchant(s, b.email, None, "Bench", True)
            b.merchant_id = m.id
            b.test_key = keys.create_key(s, m.id, "test", list(keys.SCOPES)).key
            b.live_key = keys.create_key(s, m.id, "live", list(keys.SCOPES)).key
            # live USDC payments on the local chain, to the published test key (development only)
            merchants.set_wallet(s, m.id, "live", "evm", TEST_XPUBS["evm"], allow_test_keys=True)
        yield b
    finally:
        admin = sa.create_engine(sqlalchemy_url(admin_url), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# -- processes ------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux), None where it cannot be read
    (no /proc, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def gunicorn(app: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """``app`` on the API's gunicorn configuration, on a free port; waits until it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "services/api/gunicorn.conf.py", app],
        cwd=ROOT,
        env={**os.environ, **env, "BIND": f"127.0.0.1:{port}", "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn {app} exited with {proc.returncode}")
        try:
            requests.get(base + "/", timeout=0.5)
            return proc, base
        except requests.RequestException:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"gunicorn {app} did not start")


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def ensure_wrk() -> str:
    """The load generator, installed by scripts/ensure-tools when missing (apt as root, else it says how)."""
    if not shutil.which("wrk"):
        subprocess.run([str(ROOT / "scripts" / "ensure-tools"), "bench", "wrk"], check=True)
    return shutil.which("wrk") or "wrk"


def wrk(url: str, duration: str, *, key: str = "", connections: int = 32) -> float:
    """Requests/s of POST ``url`` with bench/post.lua's body; every response must be a 2xx."""
    out = subprocess.run(
        [ensure_wrk(), "-t2", f"-c{connections}", f"-d{duration}", "-s", str(ROOT / "bench" / "post.lua"), url],
        env={**os.environ, "KASSA_BENCH_KEY": key},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise RuntimeError(f"{non2xx.group(1)} failed requests during the benchmark:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
