"""axe-core (the version package.json pins, installed by ``npm ci``) run over a page open in
Chromium: the accessibility problems a person relying on a screen reader, a keyboard or
good contrast would meet.

The script is evaluated through the DevTools protocol, as Playwright evaluates any script,
so the page keeps its Content-Security-Policy: what axe checks is what a customer gets."""

from __future__ import annotations

from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")


@cache
def _source() -> str:
    return AXE.read_text()


def serious_violations(page) -> list[dict]:
    """axe's serious and critical violations on ``page`` as it is now: each rule's id, impact,
    help text and the elements (CSS selectors) that break it; empty when none."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(f"() => {{ {_source()}\n}}")
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [(n["target"], n.get("failureSummary", "")) for n in v["nodes"]],
        }
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]
