"""Shaping an object for the API (every ``shape.py`` under ``kassa_common``) reads nothing from
the database: the caller reads what the object shows (``queries.py``) and hands it over. Read
with ``ast`` from the source, nothing imported: a shape module imports nothing of SQLAlchemy,
of the database module or of a ``queries`` module, and names no session."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parents[2] / "libs" / "common" / "kassa_common"
SHAPES = sorted(COMMON.rglob("shape.py"))
READERS = ("sqlalchemy", "kassa_common.db")


def _reads(tree: ast.Module) -> list[str]:
    """What in the module reaches the database: its imports of readers, the sessions it names."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            if isinstance(node, ast.Name) and node.id in ("Session", "session", "object_session"):
                found.append(f"line {node.lineno}: {node.id}")
            continue
        for name in names:
            if name.startswith(READERS) or name.split(".")[-1] == "queries":
                found.append(f"line {node.lineno}: imports {name}")
    return found


def test_there_are_shape_modules_to_check():
    assert {p.parent.name for p in SHAPES} >= {"payments", "refunds"}


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: str(p.relative_to(COMMON)))
def test_a_shape_module_reads_nothing_from_the_database(path):
    assert _reads(ast.parse(path.read_text())) == []
