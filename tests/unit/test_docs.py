"""The manual stays true to the tree: the README is a front door (short, linking every page
of docs/), every relative link of the README and docs/*.md resolves (file and heading),
and docs/settings.md names every setting the code reads."""

from __future__ import annotations

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
