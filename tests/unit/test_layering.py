"""Development tooling sits beside the product: nothing in libs/common or services imports
kassa_dev, so a production install can leave libs/devtools out."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [ROOT / "libs" / "common", *sorted(p for p in (ROOT / "services").iterdir() if p.is_dir())]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def product_sources() -> list[Path]:
    return sorted(f for root in PRODUCT for f in root.rglob("*.py"))


def test_the_scan_covers_the_product():
    scanned = {f.relative_to(ROOT).as_posix() for f in product_sources()}
    assert "libs/common/kassa_common/cli.py" in scanned
    assert "services/chain-watcher/kassa_chain_watcher/evm.py" in scanned


def test_product_code_never_imports_the_development_tooling():
    offenders = {f.relative_to(ROOT).as_posix(): sorted(dev) for f in product_sources()
                 if (dev := {m for m in imported_modules(f) if m == "kassa_dev" or m.startswith("kassa_dev.")})}
    assert offenders == {}
