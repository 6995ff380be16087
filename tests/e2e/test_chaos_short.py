"""`make chaos --short` inside `make test` (DESIGN §7): the whole stack under restart loops
on its own PostgreSQL and RabbitMQ, one SIGKILL of every process type, PostgreSQL and
RabbitMQ each down for 5 s, the receiver answering 503 for a while, then every count
checked. The harness (kassa_dev.chaos) does the checking and prints what broke with the
processes' log tails; this test runs it as `make chaos` would, as a process.

It is in an xdist group of its own: it starts a dozen processes and two servers, so it
must not share its worker with the e2e stack.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("chaos")]
ROOT = Path(__file__).resolve().parents[2]


def test_short_chaos_run_loses_parks_and_duplicates_nothing():
    run = subprocess.run(
        [sys.executable, "-m", "kassa_dev.chaos", "--short"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    print(run.stdout[-30000:], run.stderr[-5000:], sep="\n")  # pytest shows it when the test fails
    summary = "\n".join(line for line in run.stdout.splitlines() if line.startswith("chaos: "))
    assert run.returncode == 0, f"the short chaos run failed (its log tails are in the captured output):\n{summary}"
    assert "OK: nothing lost" in run.stdout
