"""POST /payments (test key, an Idempotency-Key on every second request) against the bare
Flask endpoint and the bare endpoint that commits one row, all three on the API's gunicorn
configuration, loaded by the same wrk script."""
from __future__ import annotations

import sqlalchemy as sa

from bench.common import Bench, Result, gunicorn, stop, wrk


def measure(app: str, path: str, env: dict, duration: str, key: str = "") -> float:
    proc, base = gunicorn(app, env)
    try:
        wrk(base + path, "1s", key=key)  # warm up
        return wrk(base + path, duration, key=key)
    finally:
        stop(proc)


def run(b: Bench) -> list[Result]:
    duration = "1s" if b.smoke else "10s"
    env = b.env()
    with b.engine(1) as (engine, _), engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, body jsonb NOT NULL)"))
    bare = measure("bench.bare_app:app", "/v1/api/payments", env, duration)
    commit = measure("bench.bare_app:app", "/commit/v1/api/payments", env, duration)
    kassa = measure("kassa_api.wsgi:app", "/v1/api/payments", env, duration, key=b.test_key)
    vs_commit, vs_bare = kassa / commit, kassa / bare
    return [
        Result("api_create_vs_commit", "POST /payments vs bare Flask + one-row commit", "requests/s", kassa,
               "≥ 0.8×", vs_commit >= 0.8, commit, "bare Flask + psycopg2 commit", vs_commit),
        Result("api_create_vs_bare", "POST /payments vs bare Flask", "requests/s", kassa,
               "≥ 0.35× (moonshot)", vs_bare >= 0.35, bare, "bare Flask", vs_bare),
    ]
