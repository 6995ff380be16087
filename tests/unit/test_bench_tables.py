"""Where `make bench` publishes its numbers: the full table in docs/performance.md, the
compact one in the README, each between the bench markers and nowhere else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

# loaded by path: under pytest the name ``bench`` is the tests' package tests/bench
_spec = importlib.util.spec_from_file_location(
    "bench_tables", Path(__file__).resolve().parents[2] / "bench" / "tables.py"
)
tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tables)
START, END, between_markers, compact_table, table, write_tables = (
    tables.START,
    tables.END,
    tables.between_markers,
    tables.compact_table,
    tables.table,
    tables.write_tables,
)

REPORT = {
    "at": "2026-11-25T04:32:37Z",
    "revision": "1dcc28c53bcd0000",
    "cpus": 2,
    "load_average": [1.0, 1.0, 1.0],
    "load_after": [2.4, 2.0, 1.5],
    "results": [
        {
            "title": "settle a transfer",
            "value": 326.0,
            "unit": "transfers/s",
            "reference": 385.0,
            "reference_title": "same with 10,000",
            "ratio": 0.85,
            "target": "≥ 0.8×",
            "met": True,
        },
        {
            "title": "confirmation → webhook p50",
            "value": 430.0,
            "unit": "ms",
            "reference": None,
            "reference_title": None,
            "ratio": None,
            "target": "< 200 ms",
            "met": False,
        },
    ],
}


def test_compact_table_keeps_what_was_measured_against_its_target():
    assert compact_table(REPORT["results"]).splitlines() == [
        "| scenario | measured | target | met |",
        "|---|---|---|---|",
        "| settle a transfer | 326 transfers/s (0.85×) | ≥ 0.8× | yes |",
        "| confirmation → webhook p50 | 430 ms | < 200 ms | **no** |",
    ]


def test_each_file_gets_its_table_between_the_markers_only(tmp_path):
    performance, readme = tmp_path / "performance.md", tmp_path / "README.md"
    performance.write_text(f"# Performance\n\nbefore\n{START}\nold\n{END}\nafter\n")
    readme.write_text(f"# Kassa\n{START}\nold\n{END}\n[more](docs/performance.md)\n")
    write_tables(REPORT, performance, readme)
    full, compact = performance.read_text(), readme.read_text()
    assert full.startswith("# Performance\n\nbefore\n") and full.endswith(f"{END}\nafter\n")
    assert table(REPORT["results"]) in full and "reference (same run)" in full and "old" not in full
    assert compact_table(REPORT["results"]) in compact and "reference (same run)" not in compact
    assert "Measured 2026-11-25T04:32:37Z at `1dcc28c53bcd` on 2 cores" in compact
    assert compact.endswith(f"{END}\n[more](docs/performance.md)\n")


def test_a_file_without_markers_is_left_alone(tmp_path):
    assert between_markers("no markers here", "| t |", REPORT) is None
    readme, performance = tmp_path / "README.md", tmp_path / "performance.md"
    readme.write_text("plain\n")
    performance.write_text(f"{START}\n{END}\n")
    write_tables(REPORT, performance, readme)
    assert readme.read_text() == "plain\n" and table(REPORT["results"]) in performance.read_text()
