"""`make bench`: Kassa's speed as ratios against references measured in the same run.

Results go to bench/results/latest.json and a table on stdout. Scenarios:
- api_create_payment: POST /payments (auth, validation, address derivation, payment +
  outbox rows in one transaction) vs a bare Flask endpoint, same gunicorn, same wrk load.
- expire_100k: 100,000 overdue payments expired by the expirer's batch job (each with its
  payment.expired outbox event) vs one bare UPDATE of the same rows.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import requests
import sqlalchemy as sa

from kassa_common import accounts
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory, sqlalchemy_url, unit_of_work
from kassa_common.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
ADMIN_URL = os.environ.get("BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DURATION = os.environ.get("BENCH_DURATION", "8s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn(app: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "services/api/gunicorn.conf.py", app],
        cwd=ROOT, env={**os.environ, **env, "BIND": f"127.0.0.1:{port}", "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(base + "/", timeout=0.5)
            return proc, base
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"gunicorn {app} did not start")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(20)


def wrk(url: str, key: str = "") -> float:
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{DURATION}", "-s", str(ROOT / "bench" / "post.lua"), url],
                         env={**os.environ, "KASSA_BENCH_KEY": key}, capture_output=True, text=True, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise RuntimeError(f"{non2xx.group(1)} failed requests during the benchmark:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def bench_api(settings: Settings, key: str) -> dict:
    env = {"DATABASE_URL": settings.database_url, "RATE_LIMIT_PER_MINUTE": "100000000", "LOG_LEVEL": "WARNING",
           "SECRET_KEY": secrets.token_urlsafe(32)}  # the web refuses the built-in development secret
    bare, bare_url = gunicorn("bench.bare_app:app", env)
    try:
        wrk(bare_url + "/v1/api/payments")  # warm up
        reference = wrk(bare_url + "/v1/api/payments")
    finally:
        stop(bare)
    api, api_url = gunicorn("kassa_api.wsgi:app", env)
    try:
        wrk(api_url + "/v1/api/payments", key)
        measured = wrk(api_url + "/v1/api/payments", key)
    finally:
        stop(api)
    return {"name": "api_create_payment", "unit": "requests/s", "value": round(measured, 1),
            "reference": round(reference, 1), "ratio": round(measured / reference, 3), "target_ratio": 0.35}


def bench_expiry(settings: Settings, merchant_id, n: int = 100_000) -> dict:
    from kassa_expirer.jobs import Jobs

    engine = make_engine(settings.database_url, pool_size=2)
    sessions = make_session_factory(engine)
    fill = sa.text("""
        INSERT INTO payments (id, short_id, merchant_id, test_mode, status, amount, token, network, decimals,
            address, checkout_url, derivation_index, crypto_amount_units, amount_received_units, exchange_rate,
            required_confirmations, metadata, expires_at, test_auto_complete)
        SELECT gen_random_uuid(), :tag || lpad(g::text, 7, '0'), :m, true, 'PENDING', 10, 'USDC', 'BASE', 6,
            :tag || 'addr' || g, 'http://x/pay/' || g, g, 10000000, 0, 1, 10, '{}', now() - interval '1 minute', false
        FROM generate_series(1, :n) g""")

    def fresh(tag: str) -> None:
        with engine.begin() as conn:
            conn.execute(fill, {"tag": tag, "m": merchant_id, "n": n})

    fresh("R")
    t = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE payments SET status = 'EXPIRED' WHERE short_id LIKE 'R%' AND status = 'PENDING'"))
    reference = time.perf_counter() - t

    fresh("E")
    jobs = Jobs(sessions, None, timedelta(hours=1), batch=2000)
    t = time.perf_counter()
    total = 0
    while (done := jobs.expire()):
        total += done
    measured = time.perf_counter() - t
    engine.dispose()
    assert total == n, f"expired {total} of {n}"
    return {"name": "expire_100k", "unit": "seconds", "value": round(measured, 2), "reference": round(reference, 2),
            "ratio": round(reference / measured, 3), "target_seconds": 10}


def main() -> int:
    name = f"kassa_bench_{secrets.token_hex(3)}"
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    upgrade(url)
    settings = Settings.from_env({"DATABASE_URL": url})
    engine = make_engine(url, pool_size=1)
    with unit_of_work(make_session_factory(engine)) as s:
        m = accounts.create_merchant(s, f"bench-{secrets.token_hex(3)}@example.com", None, "Bench", True)
        merchant_id = m.id
        key = accounts.create_key(s, m.id, "test", list(accounts.SCOPES)).key
    engine.dispose()
    try:
        results = [bench_api(settings, key), bench_expiry(settings, merchant_id)]
    finally:
        admin = sa.create_engine(sqlalchemy_url(ADMIN_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                     "cpus": os.cpu_count(), "results": results}, indent=2) + "\n")
    print(f"{'benchmark':<22}{'value':>12}{'reference':>12}{'ratio':>8}  target")
    for r in results:
        target = f"ratio >= {r['target_ratio']}" if "target_ratio" in r else f"< {r['target_seconds']} s"
        print(f"{r['name']:<22}{r['value']:>12}{r['reference']:>12}{r['ratio']:>8}  {target} ({r['unit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
