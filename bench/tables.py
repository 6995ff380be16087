"""Where `make bench` publishes its numbers: the full table in ``docs/performance.md`` and
the compact one in ``README.md``, each between ``<!-- bench:start -->`` and
``<!-- bench:end -->`` (nothing else in either file changes). Imports nothing of the bench."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PERFORMANCE = ROOT / "docs" / "performance.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def fmt(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}" if abs(x) >= 1 else f"{x:.3f}"


def table(results: list[dict]) -> str:
    lines = ["| scenario | measured | reference (same run) | ratio | target | met |", "|---|---|---|---|---|---|"]
    for r in results:
        ref = f"{fmt(r['reference'])} {r['unit']} ({r['reference_title']})" if r.get("reference") is not None else "—"
        ratio = f"{r['ratio']:.2f}×" if r.get("ratio") is not None else "—"
        met = "yes" if r["met"] else "**no**"
        lines.append(f"| {r['title']} | {fmt(r['value'])} {r['unit']} | {ref} | {ratio} | {r['target']} | {met} |")
    return "\n".join(lines)


def compact_table(results: list[dict]) -> str:
    """The README's table: what was measured against its target."""
    lines = ["| scenario | measured | target | met |", "|---|---|---|---|"]
    for r in results:
        ratio = f" ({r['ratio']:.2f}×)" if r.get("ratio") is not None else ""
        lines.append(
            f"| {r['title']} | {fmt(r['value'])} {r['unit']}{ratio} | {r['target']} | "
            f"{'yes' if r['met'] else '**no**'} |"
        )
    return "\n".join(lines)


def between_markers(text: str, table_text: str, report: dict) -> str | None:
    """``text`` with what lies between the bench markers replaced by ``table_text`` and the
    run's line; None if ``text`` has no markers."""
    if START not in text or END not in text:
        return None
    load = report["load_average"]
    body = (
        f"{START}\n{table_text}\n\nMeasured {report['at']} at `{report['revision'][:12]}` on "
        f"{report['cpus']} cores (load average before the run {load[0]:.1f}, after {report['load_after'][0]:.1f}); "
        f"`make bench` writes it.\n{END}"
    )
    return re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: body, text, flags=re.DOTALL)


def write_tables(report: dict, performance: Path = PERFORMANCE, readme: Path = README) -> None:
    """The full table into docs/performance.md, the compact one into the README."""
    for path, text in ((performance, table(report["results"])), (readme, compact_table(report["results"]))):
        updated = between_markers(path.read_text(), text, report)
        if updated is None:
            print(f"{path.name} has no {START} … {END} markers: table not written there", file=sys.stderr)
        else:
            path.write_text(updated)
