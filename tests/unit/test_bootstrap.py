"""One bootstrap: every process (the web, the workers, the ``kassa`` commands) gets its engine
from ``kassa_common.bootstrap``, so each is named ``kassa-<name>`` in PostgreSQL and none
wires its database by hand. Read from the source with ``ast``, nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [ROOT / "libs", ROOT / "services"]
# Where an engine may be made: the bootstrap, the function itself, and Alembic's own entry point.
ALLOWED = {
    "libs/common/kassa_common/bootstrap.py",
    "libs/common/kassa_common/db.py",
    "libs/common/kassa_common/migrations/env.py",
}


def calls_make_engine(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that call ``make_engine`` (by name or as an attribute)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "make_engine")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "make_engine")
        )
    ]


def test_only_the_bootstrap_makes_the_processes_engines():
    found = [
        f"{rel}:{line}"
        for top in PRODUCT
        for path in sorted(top.rglob("*.py"))
        if (rel := str(path.relative_to(ROOT))) not in ALLOWED
        for line in calls_make_engine(ast.parse(path.read_text(), str(path)))
    ]
    assert not found, f"an engine made outside kassa_common.bootstrap: {', '.join(found)}"


def test_the_check_finds_a_hand_made_engine():
    assert calls_make_engine(ast.parse("engine = make_engine(url, pool_size=1)\ndb.make_engine(url)\n")) == [1, 2]
