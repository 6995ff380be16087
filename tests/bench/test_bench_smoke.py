"""`make bench --smoke`: the harness runs every scenario end to end with tiny sizes and
writes a well-formed result. Speed is not checked here (make bench measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {
    "api_create_vs_commit",
    "api_create_vs_bare",
    "confirm_to_webhook_p50",
    "confirm_to_webhook_p99",
    "webhooks_per_sender",
    "watcher_catch_up",
    "watcher_address_cost",
    "settle_1m",
    "expire_100k",
}

pytestmark = pytest.mark.slow


def test_smoke_run_writes_every_scenario_with_its_target(tmp_path):
    out = tmp_path / "latest.json"
    tables_before = {name: (ROOT / name).read_text() for name in ("README.md", "docs/performance.md")}
    run = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "BENCH_ADMIN_URL": ADMIN_URL},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["smoke"] is True and report["errors"] == {}
    assert len(report["revision"]) >= 40 and report["cpus"] == os.cpu_count()
    assert {r["name"] for r in report["results"]} == SCENARIOS
    for r in report["results"]:
        assert r["value"] > 0 and r["target"] and isinstance(r["met"], bool), r
        if r["reference"] is not None:
            assert r["reference"] > 0 and r["ratio"] == pytest.approx(r["value"] / r["reference"], rel=0.02), r
    assert "| scenario | measured |" in run.stdout  # the table is printed
    # a smoke run leaves the published numbers alone
    assert {name: (ROOT / name).read_text() for name in tables_before} == tables_before
