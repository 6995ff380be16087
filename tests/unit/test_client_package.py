"""kassa-client is a package of its own: one version everywhere, ``requests`` its only
dependency, Python 3.10 syntax, and no import of Kassa's own code in either direction."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import kassa_client

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
SOURCES = sorted((CLIENT / "kassa_client").rglob("*.py"))
PYPROJECT = tomllib.loads((CLIENT / "pyproject.toml").read_text())
ALLOWED_THIRD_PARTY = {"requests", "urllib3"}  # urllib3: requests' own transport, installed with it
NEWER_THAN_310 = {
    "Self",
    "StrEnum",
    "tomllib",
    "UTC",
    "ExceptionGroup",
    "TaskGroup",
    "LiteralString",
    "Never",
    "assert_never",
    "NotRequired",
    "Required",
    "Unpack",
    "TypeVarTuple",
    "override",
}


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {a.name for a in node.names}
    return names


def test_one_version_in_the_metadata_the_code_and_the_changelog():
    changelog = (CLIENT / "CHANGELOG.md").read_text()
    latest = re.search(r"^## \[?(\d+\.\d+\.\d+)", changelog, re.MULTILINE)
    assert PYPROJECT["project"]["version"] == kassa_client.__version__ == latest.group(1)


def test_the_only_dependency_is_requests_and_python_310_is_enough():
    assert PYPROJECT["project"]["dependencies"] == ["requests>=2.31,<3"]
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"
    assert (CLIENT / "kassa_client" / "py.typed").exists()
    assert PYPROJECT["tool"]["setuptools"]["package-data"]["kassa_client"] == ["py.typed"]


def test_the_client_imports_only_the_standard_library_and_requests():
    allowed = set(sys.stdlib_module_names) | ALLOWED_THIRD_PARTY | {"kassa_client"}
    outside = {
        f"{p.relative_to(ROOT)}: {n}" for p in SOURCES for n in _module_imports(p) if n.split(".")[0] not in allowed
    }
    assert outside == set()


def _module_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_client_parses_as_python_310_and_uses_nothing_newer():
    for path in SOURCES:
        ast.parse(path.read_text(), str(path), feature_version=(3, 10))
        assert not imported(path) & NEWER_THAN_310, path


def test_kassa_never_imports_its_client():
    product = [*ROOT.glob("libs/*/kassa_*/**/*.py"), *ROOT.glob("services/*/kassa_*/**/*.py")]
    assert product
    offenders = [
        str(p.relative_to(ROOT)) for p in product if any(n.split(".")[0] == "kassa_client" for n in _module_imports(p))
    ]
    assert offenders == []
