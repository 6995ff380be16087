"""POST /payments (test key, an Idempotency-Key on every second request) against the bare
Flask endpoint and the bare endpoint that commits one row, all three on the API's gunicorn
configuration, loaded by the same wrk script.

The three servers run side by side and are loaded in turn, a few seconds each, for several
rounds: the round whose ratio is the median one is reported, so a change in what else the
machine is doing shifts the measurement and its references together.

The creates are a merchant's of their own, and its payments are deleted afterwards: left
in the table, the expirer would complete every one of them (test mode) through the settler
while the next scenario measures the settler."""

from __future__ import annotations

import os
from contextlib import ExitStack

import sqlalchemy as sa

from bench.common import Bench, Result, cpu_seconds, gunicorn, stop, wrk

SERVERS = {  # name: (application, path)
    "bare": ("bench.bare_app:app", "/v1/api/payments"),
    "commit": ("bench.bare_app:app", "/commit/v1/api/payments"),
    "kassa": ("kassa_api.wsgi:app", "/v1/api/payments"),
}


def run(b: Bench) -> list[Result]:
    rounds, seconds = (1, 1) if b.smoke else (3, 4)
    env = b.env()
    with b.engine(1) as (engine, _), engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, body jsonb NOT NULL)"))
    with ExitStack() as running, b.engine(1) as (engine, _):
        urls, procs = {}, {}
        for name, (app, path) in SERVERS.items():
            proc, base = gunicorn(app, env)
            running.callback(stop, proc)
            urls[name], procs[name] = base + path, proc
        merchant_id, test_key = b.new_merchant()
        key = {"kassa": test_key}
        for name, url in urls.items():
            wrk(url, "1s", key=key.get(name, ""))  # warm up
        measured: dict[str, list[float]] = {name: [] for name in urls}
        cpu: dict[str, list[dict[str, float]]] = {name: [] for name in urls}
        for _ in range(rounds):
            for name, url in urls.items():
                web, db = _processes(procs[name].pid), _backends(engine, b.name)
                before = {pid: _cpu(pid) for pid in web + db}
                measured[name].append(wrk(url, f"{seconds}s", key=key.get(name, "")))
                requests = measured[name][-1] * seconds
                cpu[name].append(
                    {
                        part: round(1000 * sum(_cpu(pid) - before[pid] for pid in pids) / requests, 3)
                        for part, pids in (("web", web), ("database", db))
                    }
                )
    forget_payments(b, merchant_id)
    extra = {
        "rounds": rounds,
        "seconds_per_round": seconds,
        "requests_per_second": measured,
        "cpu_ms_per_request": cpu,  # far steadier than requests/s on a loaded machine
    }
    results = []
    for ref, name, title, target, floor, ref_title in (
        (
            "commit",
            "api_create_vs_commit",
            "POST /payments vs bare Flask + one-row commit",
            "≥ 0.8×",
            0.8,
            "bare Flask + psycopg2 commit",
        ),
        ("bare", "api_create_vs_bare", "POST /payments vs bare Flask", "≥ 0.35× (moonshot)", 0.35, "bare Flask"),
    ):
        kassa, reference = median_round(measured["kassa"], measured[ref])
        results.append(
            Result(
                name,
                title,
                "requests/s",
                kassa,
                target,
                kassa / reference >= floor,
                reference,
                ref_title,
                kassa / reference,
                extra,
            )
        )
    return results


def _cpu(pid: int) -> float:
    """``cpu_seconds``, 0 once the process is gone."""
    return cpu_seconds(pid) or 0.0


def _processes(root: int) -> list[int]:
    """gunicorn's arbiter and its workers."""
    found = [root]
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == root:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _backends(engine, database: str) -> list[int]:
    """The PostgreSQL backends serving the bench database (on this machine when local)."""
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.text("SELECT pid FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"),
                {"d": database},
            ).scalars()
        )


def forget_payments(b: Bench, merchant_id) -> None:
    """Delete what the creates left: payments, their events (outbox) and Idempotency-Keys."""
    with b.engine(1) as (engine, _), engine.begin() as conn:
        for table in ("events", "idempotency_keys", "payments"):
            conn.execute(sa.text(f"DELETE FROM {table} WHERE merchant_id = :m"), {"m": merchant_id})


def median_round(values: list[float], references: list[float]) -> tuple[float, float]:
    """The (value, reference) of the round whose ratio is the median one."""
    rounds = sorted(zip(values, references, strict=False), key=lambda pair: pair[0] / pair[1])
    return rounds[len(rounds) // 2]
