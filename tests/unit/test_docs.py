"""The manual stays true to the tree: the README is a front door (short, linking every page
of docs/), every relative link of the README and docs/*.md resolves (file and heading),
and docs/settings.md names every setting the code reads."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
MANUAL = (
    "guide",
    "api",
    "webhooks",
    "settlement",
    "refunds",
    "pricing",
    "settings",
    "operations",
    "architecture",
    "performance",
    "client",
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_ROOTS = ("libs", "services", "clients", "bench", "dev", "tests")
READS = [  # how the code reads a variable of its environment
    re.compile(r"""(?:environ|\benv)(?:\.get)?\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""(?:environ|\benv)\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]"""),
    re.compile(r"""getenv\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""_maybe\(\s*env,\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""^[A-Z_]+_ENV\s*=\s*["']([A-Z][A-Z0-9_]+)["']""", re.MULTILINE),
]
PER_NETWORK = re.compile(r"""f["']\{name\}(_[A-Z][A-Z0-9_]+)["']""")  # NAME_RPC_URL … in networks.py
NOT_SETTINGS = re.compile(
    r"^(PATH|HOME|LANG|PYTHONPATH|PYTHONDONTWRITEBYTECODE|HTTP_\w+|PYTEST_XDIST_\w+|PYTEST_CURRENT_TEST|KASSA_MUTATE_MODULES)$"
)  # the system's, Python's, WSGI's, pytest's and the mutation driver's own


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.DOTALL | re.MULTILINE)
    return {slug(m) for m in re.findall(r"^#{1,6}\s+(.*)$", text, flags=re.MULTILINE)}


def links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.DOTALL | re.MULTILINE)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_readme_is_a_front_door_under_200_lines_linking_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    linked = set(links(ROOT / "README.md"))
    for page in MANUAL:
        assert f"docs/{page}.md" in linked, page
    assert {p.stem for p in PAGES} >= set(MANUAL)


@pytest.mark.parametrize("doc", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_relative_link_resolves(doc):
    assert (
        slug("Bitcoin wallets: the watch-only descriptor and the gap limit")
        == "bitcoin-wallets-the-watch-only-descriptor-and-the-gap-limit"
    )
    for target in links(doc):
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        assert dest.exists(), f"{doc.name}: {target} (no such file)"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{doc.name}: {target} (no such heading in {dest.name})"


def settings_the_code_reads() -> set[str]:
    names: set[str] = set()
    for top in CODE_ROOTS:
        for path in (ROOT / top).rglob("*"):
            if path.suffix not in (".py", ".lua") or "node_modules" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for pattern in READS:
                names.update(pattern.findall(text))
            names.update(f"<NETWORK>{suffix}" for suffix in PER_NETWORK.findall(text))
    names.update(re.findall(r"^([A-Z][A-Z0-9_]*)\s*\?=", (ROOT / "Makefile").read_text(), flags=re.MULTILINE))
    return {n for n in names if not NOT_SETTINGS.match(n)}


def test_the_grep_finds_the_settings_it_should():
    found = settings_the_code_reads()  # a grep that finds nothing would let any page pass
    assert {
        "DATABASE_URL",
        "SWEEP_MIN_USD",
        "CHAIN_WATCHER_POLL_SECONDS",
        "BIND",
        "KASSA_ENV_FILE",
        "<NETWORK>_RPC_URLS",
        "<NETWORK>_CONFIRMATIONS",
        "TEST_DATABASE_ADMIN_URL",
        "PYTEST_WORKERS",
    } <= found
    assert "PATH" not in found and "HTTP_IDEMPOTENCY_KEY" not in found


def test_settings_page_names_every_setting_the_code_reads():
    page = (ROOT / "docs" / "settings.md").read_text()
    missing = sorted(n for n in settings_the_code_reads() if f"`{n}`" not in page)
    assert not missing, f"docs/settings.md does not name: {', '.join(missing)}"


@pytest.mark.parametrize("doc", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_path_a_page_names_exists(doc):
    """Moving a file must move its mention: `libs/common/kassa_common/...` in a page is a
    promise that the file is there."""
    named = re.findall(r"`((?:libs|services|dev|tests|clients|bench|contracts)/[\w./*-]+)`", doc.read_text())
    missing = [path for path in named if not list(ROOT.glob(path.rstrip("/")))]
    assert missing == []


# Where the packages a page may cite live: a dotted ``kassa_*`` name resolves to a file here.
PACKAGE_ROOTS = ("libs/common", "services/*", "dev", "clients/python")
# A module or a module's attribute: at least one dot (``kassa_bus_up`` is a metric, not code).
DOTTED = re.compile(r"(?<![\w/.<-])(kassa_[a-z_]+(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
PATHLIKE = re.compile(r"^[\w.*-]+(?:/[\w.*-]+)*/?$")
FILE_ENDINGS = (".py", ".md", ".json", ".toml", ".sol", ".yml", ".yaml", ".ini", ".lua", ".txt", ".cfg", ".mako")
# Folders a tool makes while it runs (mutmut's copy of a package), named but never in the tree.
MADE_AT_RUN_TIME = {"mutants/", "src/"}
CITING = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *PAGES]


def source_modules() -> dict[str, Path]:
    """Every module of the project's packages by dotted name (packages by their ``__init__``)."""
    found: dict[str, Path] = {}
    for pattern in PACKAGE_ROOTS:
        for root in ROOT.glob(pattern):
            for top in root.glob("kassa_*"):
                for path in top.rglob("*.py"):
                    parts = path.relative_to(root).with_suffix("").parts
                    found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULE_FILES = source_modules()


def top_level_names(body: list[ast.stmt]) -> set[str]:
    """What a module (or class) body defines: defs, classes, assignments and imported names."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {leaf.id for t in targets for leaf in ast.walk(t) if isinstance(leaf, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):
            names |= top_level_names(node.body + getattr(node, "orelse", []))
    return names


def resolves(dotted: str) -> bool:
    """``dotted`` is a module, or a module's attribute (and an attribute of that class …)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULE_FILES:
            break
    else:
        return False
    body = ast.parse(MODULE_FILES[module].read_text()).body
    for attr in parts[cut:]:
        if attr not in top_level_names(body):
            return False
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == attr]
        if not found:
            return True  # a function's or a value's attributes are not followed
        body = found[0].body
    return True


def dotted_names(doc: Path) -> list[str]:
    return DOTTED.findall(doc.read_text())


def tracked_paths() -> set[str]:
    """Every file of the tree and every folder above one, relative to the root."""
    skip = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    found: set[str] = set()
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if skip & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts):
            continue
        found.add(rel.as_posix() + ("/" if path.is_dir() else ""))
    return found


TRACKED = tracked_paths()


def cited_paths(doc: Path) -> list[str]:
    """Code spans that are paths: with a folder, ending in a file's suffix or in ``/``."""
    spans = re.findall(r"`([^`\n]+)`", doc.read_text())
    return [
        s
        for s in spans
        if PATHLIKE.match(s) and not s.startswith(".") and (s.endswith(FILE_ENDINGS) or ("/" in s and s.endswith("/")))
    ]


def path_exists(cited: str) -> bool:
    """The path itself, or a path of the tree ending with it (``payments/settle.py`` is read
    beside the package the page is talking about)."""
    if cited in MADE_AT_RUN_TIME:
        return True
    return any(fnmatch.fnmatch(p, cited) or fnmatch.fnmatch(p, "*/" + cited) for p in TRACKED)


def test_the_resolvers_see_a_stale_name_and_a_stale_path(tmp_path):
    assert resolves("kassa_common.payments") and resolves("kassa_common.payments.transitions.apply")
    assert resolves("kassa_common.messaging.publisher.Nodes") and resolves("kassa_api.deps.make_owner")
    assert not resolves("kassa_common.bus") and not resolves("kassa_common.bus.consumer")
    assert not resolves("kassa_api.deps.no_such_function")
    assert path_exists("payments/settle.py") and path_exists("routes/dashboard/")
    assert path_exists("libs/common/kassa_common/chains/contracts/*.json")
    assert not path_exists("handlers/") and not path_exists("kassa_api/workers/")
    page = tmp_path / "page.md"
    page.write_text("Messages go through `kassa_common.bus.consumer` and `kassa_api/handlers/`; see `workers/`.\n")
    assert dotted_names(page) == ["kassa_common.bus.consumer"] and cited_paths(page) == [
        "kassa_api/handlers/",
        "workers/",
    ]


@pytest.mark.parametrize("doc", [d for d in CITING if d.exists()], ids=lambda p: p.name)
def test_every_kassa_name_a_page_cites_exists(doc):
    """A ``kassa_*`` dotted name in a page is a module, or a name a module defines."""
    assert sorted({n for n in dotted_names(doc) if not resolves(n)}) == []


@pytest.mark.parametrize("doc", [d for d in CITING if d.exists()], ids=lambda p: p.name)
def test_every_path_a_page_cites_exists(doc):
    """A path in a code span (``payments/settle.py``, ``routes/dashboard/``) is in the tree."""
    assert sorted({p for p in cited_paths(doc) if not path_exists(p)}) == []


def test_the_pre_commit_ruff_is_the_pinned_ruff():
    """The hook and `make lint` check with the same ruff."""
    pinned = re.search(r"^ruff==([\d.]+)", (ROOT / "requirements-dev.txt").read_text(), flags=re.MULTILINE)
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    assert pinned and re.search(r"ruff-pre-commit\n\s+rev: v" + re.escape(pinned[1]) + r"\n", hooks)
