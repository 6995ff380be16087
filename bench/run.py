"""`make bench`: Kassa's speed as ratios and percentiles, each against a reference measured in
the same run, on this machine.

    python -m bench.run                 # every scenario (~10 min); updates the tables of docs/performance.md, README
    python -m bench.run --smoke         # seconds-long, tiny sizes: checks the harness works
    python -m bench.run --only NAME     # one scenario (repeatable): api, confirm, webhooks, watcher, settle, expiry

Needs PostgreSQL (``BENCH_ADMIN_URL``, an admin URL: a fresh database is created and dropped)
and RabbitMQ (``RABBITMQ_URL``); installs wrk when missing (root with apt), starts its own
anvil. Writes ``bench/results/latest.json`` (``--out`` elsewhere) with the git revision, the
core count and load, and every scenario's numbers; a full run also rewrites the full table
in ``docs/performance.md`` and the compact one in ``README.md``, each between
``<!-- bench:start -->`` and ``<!-- bench:end -->``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, Result, bench_database
from bench.tables import fmt, table, write_tables

ADMIN_URL = os.environ.get("BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SCENARIOS = ["api", "confirm", "webhooks", "watcher", "settle", "expiry"]


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return rev.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="seconds-long run with tiny sizes (harness check)")
    parser.add_argument("--only", action="append", choices=SCENARIOS, help="run only this scenario (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    parser.add_argument(
        "--no-readme", action="store_true", help="leave the tables of README.md and docs/performance.md as they are"
    )
    args = parser.parse_args(argv)
    chosen = args.only or SCENARIOS
    load_before = os.getloadavg()
    started = time.monotonic()
    results: list[Result] = []
    errors: dict[str, str] = {}
    with bench_database(ADMIN_URL, args.smoke) as b:
        for name in chosen:
            print(f"-- {name} ...", flush=True)
            t = time.monotonic()
            try:
                got = importlib.import_module(f"bench.{name}").run(b)
            except Exception as exc:  # noqa: BLE001 - one broken scenario must not hide the others' numbers
                errors[name] = f"{type(exc).__name__}: {exc}"
                print(f"   failed: {errors[name]}", flush=True)
                continue
            for r in got:
                print(
                    f"   {r.title}: {fmt(r.value)} {r.unit}"
                    + (f" vs {fmt(r.reference)} → {r.ratio}×" if r.ratio is not None else "")
                    + f"  [{r.target}: {'met' if r.met else 'MISSED'}]",
                    flush=True,
                )
            print(f"   ({time.monotonic() - t:.0f} s)", flush=True)
            results += got
    report = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "revision": git_revision(),
        "cpus": os.cpu_count(),
        "load_average": list(load_before),
        "load_after": list(os.getloadavg()),
        "smoke": args.smoke,
        "seconds": round(time.monotonic() - started, 1),
        "results": [r.as_json() for r in results],
        "errors": errors,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print()
    print(table(report["results"]))
    print(f"\n{len(results)} results in {report['seconds']} s → {args.out}")
    if not args.smoke and not args.only and not args.no_readme:
        write_tables(report)
    for name, err in errors.items():
        print(f"scenario {name} failed: {err}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
