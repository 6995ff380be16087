"""The layout's rules, checked on the source itself (read with ``ast``, nothing imported):
no import cycles; nothing below imports above (libs/common, the domain, imports no service,
no web framework and no development tooling; a service imports no other service and no
development tooling); only the payment package writes payment rows, only the refund
package refund rows, only the sweep package sweep rows and only the account package wallets
and held wallet changes, only the delivery modules webhook deliveries; project modules are
imported by their names (no ``as h``) and no module imports another's private names; inside
kassa_common the rooms (subpackages, loose modules) stand on floors and form no circle; files
and functions stay under their size caps; the production image holds no dev code; one
pyproject builds the product."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAYMENTS = "kassa_common.payments"
REFUNDS = "kassa_common.refunds"
ACCOUNTS = "kassa_common.accounts"
DEV = "kassa_dev"
# Columns only a payment has: an assignment to one of them is a payment row being written.
PAYMENT_ONLY = {
    "crypto_amount_units",
    "amount_received_units",
    "required_confirmations",
    "transaction_hash",
    "test_simulated_at",
    "test_auto_complete",
    "derivation_index",
    "exchange_rate",
    "checkout_url",
}
# Columns only a refund has.
REFUND_ONLY = {
    "claim_token",
    "claimed_at",
    "claim_block",
    "transfer_ref",
    "payout_units",
    "payout_block_number",
    "payout_block_hash",
}
# A refund has a transaction hash too: the refund package may set it.
SHARED_WITH_REFUNDS = {"transaction_hash"}
SWEEPS = "kassa_common.sweeps"
# Sweep rows: a sweep, a held deposit, what a sweep moved (model, table, columns only it has).
SWEEP_ROWS = [
    ("Sweep", "sweeps", {"nonce", "gas_limit", "gas_used", "effective_gas_price", "cost_units", "deposit_count"}),
    ("SweepHold", "sweep_holds", {"times_held"}),
    ("SweepItem", "sweep_items", set()),
]


# Columns only a wallet or a held wallet change has (where live money goes: DESIGN §10).
WALLET_ONLY = {"xpub", "settlement_address"}
WALLET_CHANGE_ONLY = {"cancel_token_hash", "applies_at", "applied_at"}


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def modules() -> dict[str, Module]:
    """Every module of the product and the development package, by dotted name."""
    found = {}
    for top in [*ROOT.glob("libs/*/kassa_*"), *ROOT.glob("services/*/kassa_*"), *ROOT.glob("dev/kassa_*")]:
        for path in top.rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(top.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = Module(name, path, ast.parse(path.read_text(), str(path)))
    return found


MODULES = modules()


def imports(module: Module) -> set[str]:
    """The project modules ``module`` imports, anywhere in its body."""
    out = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.name if module.is_package else module.name.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module.name:
                out.add(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# The floors, from the ground up: the domain, the processes (each on its own), the dev tooling.
DOMAIN = "kassa_common"
WEB_FRAMEWORKS = {"flask", "werkzeug", "jinja2", "gunicorn"}


def floor_of(name: str) -> str:
    """``kassa_common``, ``dev`` or the service's package (``kassa_api``, ``kassa_relay`` …)."""
    top = name.split(".")[0]
    return "dev" if top == DEV else top


def services() -> set[str]:
    return {floor_of(n) for n, m in MODULES.items() if "services" in m.path.relative_to(ROOT).parts[:1]}


def external_imports(module: Module) -> set[str]:
    """The top-level names of what ``module`` imports from outside the project."""
    out = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return {n for n in out if not n.startswith("kassa_")}


def test_the_rules_see_the_code():
    assert PAYMENTS in MODULES and "kassa_api.app" in MODULES and len(MODULES) > 50


def test_there_are_no_import_cycles():
    assert cycles({name: imports(m) for name, m in MODULES.items()}) == []


def row_writes(module: Module, model: str, table: str, columns: set[str]) -> list[str]:
    """Where ``module`` writes a row of ``model`` (table ``table``): constructs one, updates,
    inserts or deletes it, assigns one of its own ``columns`` or to a variable named like it
    (``setattr`` too), or holds SQL writing the table."""
    found = []
    variable = model.lower()
    for node in ast.walk(module.tree):
        where = f"{module.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = [a.id for a in node.args if isinstance(a, ast.Name)]
            if (
                name == model
                or (name in {"update", "insert", "delete"} and model in args)
                or (name == "setattr" and args[:1] == [variable])
            ):
                found.append(f"{where}: {ast.unparse(node)[:80]}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for leaf in ast.walk(t):
                    if isinstance(leaf, ast.Attribute) and (
                        leaf.attr in columns or (isinstance(leaf.value, ast.Name) and leaf.value.id == variable)
                    ):
                        found.append(f"{where}: {ast.unparse(t)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            sql = " ".join(node.value.upper().split())
            if any(f"{verb} {table.upper()}" in sql for verb in ("UPDATE", "INSERT INTO", "DELETE FROM")):
                found.append(f"{where}: SQL writes {table}")
    return found


def payment_writes(module: Module) -> list[str]:
    columns = PAYMENT_ONLY - SHARED_WITH_REFUNDS if in_package(module.name, REFUNDS) else PAYMENT_ONLY
    return row_writes(module, "Payment", "payments", columns)


def refund_writes(module: Module) -> list[str]:
    return row_writes(module, "Refund", "refunds", REFUND_ONLY)


def sweep_writes(module: Module) -> list[str]:
    return [w for model, table, columns in SWEEP_ROWS for w in row_writes(module, model, table, columns)]


def in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_only_the_payment_package_writes_payment_rows():
    outside = [m for name, m in MODULES.items() if not in_package(name, PAYMENTS)]
    assert [w for m in outside for w in payment_writes(m)] == []


def test_only_the_refund_package_writes_refund_rows():
    assert REFUNDS in MODULES
    outside = [m for name, m in MODULES.items() if not in_package(name, REFUNDS)]
    assert [w for m in outside for w in refund_writes(m)] == []


def test_only_the_sweep_package_writes_sweep_rows():
    # the sweeper process decides (receipts, nonces, holds) and calls kassa_common.sweeps
    assert SWEEPS in MODULES and "kassa_sweeper.engine" in MODULES
    outside = [m for name, m in MODULES.items() if not in_package(name, SWEEPS)]
    assert [w for m in outside for w in sweep_writes(m)] == []


def wallet_writes(module: Module) -> list[str]:
    return row_writes(module, "Wallet", "wallets", WALLET_ONLY) + row_writes(
        module, "WalletChange", "wallet_changes", WALLET_CHANGE_ONLY
    )


def test_only_the_account_package_writes_wallets_and_wallet_changes():
    """Where money goes, and the hold on changing it, are decided in one package: no route,
    CLI or worker writes a wallet or a held change but through ``kassa_common.accounts``."""
    assert f"{ACCOUNTS}.wallet_changes" in MODULES
    outside = [m for name, m in MODULES.items() if not in_package(name, ACCOUNTS)]
    assert [w for m in outside for w in wallet_writes(m)] == []


def test_the_write_check_would_see_a_write():
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse(
            "payment.status = 'X'\nrow.amount_received_units += 1\ns.execute(sa.update(Payment).values(a=1))\n"
            "Payment(id=1)\nq = 'update payments set status = 1'\n"
        ),
    )
    assert len(payment_writes(probe)) == 5
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse(
            "refund.status = 'X'\nrow.claimed_at = 1\ns.execute(sa.update(Refund).values(a=1))\n"
            "Refund(id=1)\nq = 'insert into refunds (id) values (1)'\n"
        ),
    )
    assert len(refund_writes(probe)) == 5
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse(
            "sweep.status = 'X'\nsetattr(sweep, 'status', 'X')\nrow.gas_used = 1\ns.add(Sweep(id=1))\n"
            "s.execute(sa.update(Sweep).values(a=1))\ns.execute(insert(SweepHold).values(a=1))\n"
            "s.execute(sa.delete(SweepHold))\nSweepItem(sweep_id=1)\nq = 'delete from sweep_items'\n"
            "q = 'UPDATE sweeps SET status = 1'\nrow.times_held += 1\n"
        ),
    )
    assert len(sweep_writes(probe)) == 11
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse(
            "wallet.xpub = 'x'\nchange.applies_at = 1\ns.execute(sa.update(WalletChange).values(a=1))\n"
            "Wallet(id=1)\nq = 'insert into wallets (id) values (1)'\n"
        ),
    )
    assert len(wallet_writes(probe)) == 5


def short_aliases(module: Module) -> list[str]:
    """Where ``module`` imports a project module (``kassa_*``) under a name of two letters or
    fewer (``as h``): the reader should see ``products.create_product``, not ``h.create_product``."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            relative = isinstance(node, ast.ImportFrom) and node.level > 0
            base = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                if a.asname and len(a.asname) <= 2 and (full.startswith("kassa_") or relative):
                    found.append(f"{module.path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_project_modules_are_imported_by_their_names():
    assert [w for m in MODULES.values() for w in short_aliases(m)] == []


def test_the_alias_check_would_see_one():
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse("from kassa_common import products as h\nimport kassa_api.checkout as ch\nimport sqlalchemy as sa\n"),
    )
    assert len(short_aliases(probe)) == 2


def test_no_product_code_imports_the_development_tooling():
    product = {name: m for name, m in MODULES.items() if not name.startswith(DEV)}
    offenders = {name: sorted(i for i in imports(m) if i.startswith(DEV)) for name, m in product.items()}
    assert {k: v for k, v in offenders.items() if v} == {}


def dockerfile_stages() -> dict[str, list[str]]:
    """The Dockerfile's stages by name, each its instructions (continuation lines joined)."""
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            words = line.split()
            current = stages.setdefault(words[-1] if "AS" in (w.upper() for w in words) else words[1], [])
            current.append(line)
            continue
        current.append(line)
    return stages


def image_instructions(target: str) -> list[str]:
    """Every instruction that builds ``target``, its base stages' first."""
    stages = dockerfile_stages()
    base = stages[target][0].split()[1]
    return (image_instructions(base) if base in stages else []) + stages[target]


# An instruction that brings dev/ (or the whole checkout) into an image, or installs it.
DEV_IN_IMAGE = re.compile(r"(?:^|\s)\.?/?dev/?(?:\s|$)|kassa_dev|^COPY\s+\.\s")


def test_the_production_image_holds_no_dev_code():
    stages = dockerfile_stages()
    assert {"production", "development"} <= set(stages)
    assert list(stages)[-1] == "production"  # a plain `docker build` builds the production image
    production = image_instructions("production")
    assert [i for i in production if DEV_IN_IMAGE.search(i)] == []
    assert [i for i in image_instructions("development") if DEV_IN_IMAGE.search(i)]  # the check can see it


def test_one_pyproject_builds_the_product_from_every_process_folder():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    where = project["tool"]["setuptools"]["packages"]["find"]["where"]
    folders = sorted(
        str(p.parent.parent.relative_to(ROOT))
        for p in [*ROOT.glob("libs/*/kassa_*/__init__.py"), *ROOT.glob("services/*/kassa_*/__init__.py")]
    )
    assert sorted(where) == folders
    assert (
        sorted(
            str(p.relative_to(ROOT))
            for p in [*ROOT.glob("libs/**/pyproject.toml"), *ROOT.glob("services/**/pyproject.toml")]
        )
        == []
    )


def test_every_process_folder_is_a_floor_of_its_own():
    assert {
        "kassa_api",
        "kassa_relay",
        "kassa_settler",
        "kassa_chain_watcher",
        "kassa_sweeper",
        "kassa_webhook_sender",
        "kassa_expirer",
    } <= services()


def test_the_domain_imports_no_service_no_web_framework_and_no_dev_tooling():
    domain = {name: m for name, m in MODULES.items() if floor_of(name) == DOMAIN}
    upward = {name: sorted(i for i in imports(m) if floor_of(i) != DOMAIN) for name, m in domain.items()}
    assert {k: v for k, v in upward.items() if v} == {}
    web = {name: sorted(external_imports(m) & WEB_FRAMEWORKS) for name, m in domain.items()}
    assert {k: v for k, v in web.items() if v} == {}


def test_a_service_imports_only_the_domain_and_itself():
    found = {}
    for name, m in MODULES.items():
        home = floor_of(name)
        if home in services():
            others = sorted(i for i in imports(m) if floor_of(i) not in (home, DOMAIN))
            if others:
                found[name] = others
    assert found == {}


def test_the_floor_checks_would_see_an_arrow_running_back_up():
    probe = Module(
        "kassa_common.probe", ROOT / "probe.py", ast.parse("from kassa_api.app import create_app\nimport flask\n")
    )
    assert {floor_of(i) for i in imports(probe)} == {"kassa_api"}
    assert external_imports(probe) & WEB_FRAMEWORKS == {"flask"}


def reads_the_environment(module: Module) -> bool:
    """``os.environ`` or ``os.getenv`` anywhere in ``module``."""
    return any(
        isinstance(n, ast.Attribute)
        and n.attr in ("environ", "getenv")
        and isinstance(n.value, ast.Name)
        and n.value.id == "os"
        for n in ast.walk(module.tree)
    )


def test_settings_alone_read_the_environment():
    product = {name: m for name, m in MODULES.items() if floor_of(name) != "dev"}
    # kassa_common.envfile only adds a .env file's settings to the environment, for Settings to read
    assert sorted(name for name, m in product.items() if reads_the_environment(m)) == [
        "kassa_common.config",
        "kassa_common.envfile",
    ]


# Test modules share fixtures and helpers through tests/support (and conftest files), never
# by importing them from another test module.
TEST_PACKAGES = ("tests.integration", "tests.e2e", "tests.browser", "tests.unit")


def imports_of_test_modules(path: Path, tree: ast.Module) -> list[str]:
    """Where the test file at ``path`` imports from a test module: ``file:line: module``."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            names = [".".join([*base, *([node.module] if node.module else [])])]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
            for name in names
            if any(name == p or name.startswith(p + ".") for p in TEST_PACKAGES)
        ]
    return found


def sources_of_tests() -> list[Path]:
    """Every test file but tests/support's and the conftest files."""
    return [
        p
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if p.relative_to(ROOT).parts[1] != "support" and p.name != "conftest.py"
    ]


def test_no_test_module_imports_from_another_test_module():
    files = sources_of_tests()
    assert ROOT / "tests" / "unit" / "test_architecture.py" in files
    assert [hit for p in files for hit in imports_of_test_modules(p, ast.parse(p.read_text(), str(p)))] == []


def test_the_test_import_check_would_see_one():
    probe = ROOT / "tests" / "integration" / "web" / "probe.py"
    source = (
        "from tests.integration.web.test_cli import kassa\nimport tests.unit.test_evm_edges\n"
        "from .test_cli import kassa\nfrom ..refunds.conftest import paid_payment\n"
        "from tests.e2e import test_x\nfrom tests.browser.test_y import z\n"
        "from tests.support.cli import kassa\nfrom tests.conftest import pg\nimport tests.support.anvil\n"
    )
    assert [hit.split(": ")[1] for hit in imports_of_test_modules(probe, ast.parse(source))] == [
        "tests.integration.web.test_cli",
        "tests.unit.test_evm_edges",
        "tests.integration.web.test_cli",
        "tests.integration.refunds.conftest",
        "tests.e2e",
        "tests.browser.test_y",
    ]


# Inside kassa_common: each subpackage or loose module is a room; rooms import each other
# downwards only. From the ground up (a room may import its own floor and those below):
COMMON_FLOORS = [
    # ground: no domain knowledge, imported by everything
    {"db", "emails", "envfile", "errors", "ids", "models", "numbers", "paging", "statuses"}
    | {"timefmt", "transient", "urls", "migrate"},
    # plumbing: the bus, the chains, prices, who is asking, settings and the process bootstrap
    {"messaging", "chains", "pricing", "owner", "fields", "config", "bootstrap", "worker", "retention", "idempotency"},
    # what the aggregates share: transfers to payments' addresses, read alike by all of them
    {"transfers"},
    # the domain's aggregates and what reads across them
    {"accounts", "payments", "refunds", "sweeps", "webhooks", "products", "events"},
    # the command line over everything
    {"cli"},
]
# Arrows that close a circle between rooms today, to be cut (may only shrink: an arrow no
# longer there must leave this list).
COMMON_CIRCLE_ALLOWANCES: set[tuple[str, str]] = set()


def room_of(name: str) -> str | None:
    """``payments`` for ``kassa_common.payments.settle``; None outside kassa_common."""
    parts = name.split(".")
    return parts[1] if parts[0] == DOMAIN and len(parts) > 1 else None


def room_graph(mods: dict[str, Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, m in mods.items():
        room = room_of(name)
        if room is None:
            continue
        graph.setdefault(room, set())
        graph[room] |= {r for r in map(room_of, imports(m)) if r and r != room}
    return graph


def arrows_back_up(graph: dict[str, set[str]]) -> list[str]:
    floor = {room: i for i, rooms in enumerate(COMMON_FLOORS) for room in rooms}
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor[b] > floor[a])


def test_every_room_of_kassa_common_has_a_floor():
    assert sorted(set(room_graph(MODULES)) - {r for rooms in COMMON_FLOORS for r in rooms}) == []


def test_kassa_commons_rooms_form_no_circle_and_no_arrow_runs_back_up():
    graph = room_graph(MODULES)
    for a, b in COMMON_CIRCLE_ALLOWANCES:
        assert b in graph[a], f"{a} -> {b} is gone: remove it from COMMON_CIRCLE_ALLOWANCES"
    cut = {a: targets - {b for x, b in COMMON_CIRCLE_ALLOWANCES if x == a} for a, targets in graph.items()}
    assert cycles(cut) == []
    assert arrows_back_up(graph) == []


def test_the_room_checks_would_see_a_circle_and_an_arrow_back_up():
    probe = {
        "kassa_common.db": Module("kassa_common.db", ROOT / "db.py", ast.parse("from kassa_common import cli\n")),
        "kassa_common.cli": Module("kassa_common.cli", ROOT / "cli.py", ast.parse("from kassa_common import db\n")),
    }
    graph = room_graph(probe)
    assert graph == {"db": {"cli"}, "cli": {"db"}}
    assert cycles(graph) == [["cli", "db"]] and arrows_back_up(graph) == ["db -> cli"]


def payments_importing_refunds(mods: dict[str, Module]) -> list[str]:
    """Where a module of the payment package imports the refund package (anywhere in its
    body, a deferred import inside a function too): ``module -> imported``."""
    return sorted(
        f"{name} -> {i}"
        for name, m in mods.items()
        if in_package(name, PAYMENTS)
        for i in imports(m)
        if in_package(i, REFUNDS)
    )


def test_between_payments_and_refunds_the_arrows_run_one_way():
    """DESIGN §11, round two: a transfer takes one path (the settler decides whether it pays a
    payment or a refund), and the refund package may import the payment package (a refund is
    of a payment), never the other way round."""
    graph = room_graph(MODULES)
    assert "payments" in graph["refunds"]  # the rule below has something to hold apart
    assert payments_importing_refunds(MODULES) == []


def test_the_direction_check_would_see_payments_importing_refunds():
    probe = {
        "kassa_common.payments.probe": Module(
            "kassa_common.payments.probe",
            ROOT / "probe.py",
            ast.parse("def f():\n    from kassa_common.refunds.payouts import apply_report\n"),
        ),
        "kassa_common.refunds.probe": Module(
            "kassa_common.refunds.probe", ROOT / "probe.py", ast.parse("from kassa_common.payments import settle\n")
        ),
    }
    assert payments_importing_refunds({**MODULES, **probe}) == [
        "kassa_common.payments.probe -> kassa_common.refunds.payouts"
    ]


# Private names (``_x``) imported from another module, today: to be made public or moved
# (may only shrink).
PRIVATE_IMPORT_ALLOWANCES: set[str] = set()


def private_imports(module: Module) -> set[str]:
    """``from other import _name``: a name another module keeps to itself."""
    found = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.name if module.is_package else module.name.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.add(f"{module.name} <- {base}.{a.name}")
    return found


def test_no_module_imports_another_modules_private_names():
    found = {hit for m in MODULES.values() for hit in private_imports(m)}
    assert sorted(PRIVATE_IMPORT_ALLOWANCES - found) == [], "no longer imported: shrink the allowance"
    assert sorted(found - PRIVATE_IMPORT_ALLOWANCES) == []


def test_the_private_import_check_would_see_one():
    probe = Module(
        "kassa_common.chains.probe", ROOT / "probe.py", ast.parse("from .hd import _derive, public, __all__\n")
    )
    assert private_imports(probe) == {"kassa_common.chains.probe <- kassa_common.chains.hd._derive"}


# Size caps: a file a reader can hold, a function a reader can follow (migrations aside).
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
# Today's offenders, at today's size: each may only shrink, and leaves the list once under the cap.
FILE_ALLOWANCES = {
    "dev/kassa_dev/chaos/stack.py": 419,
    "dev/kassa_dev/mutate.py": 473,
    "libs/common/kassa_common/cli.py": 425,
    "libs/common/kassa_common/config.py": 410,
    "libs/common/kassa_common/messaging/consumer.py": 415,
    "libs/common/kassa_common/payments/create.py": 452,
    "libs/common/kassa_common/payments/settle.py": 487,
    "libs/common/kassa_common/pricing/service.py": 414,
    "libs/common/kassa_common/refunds/payouts.py": 517,
    "services/webhook-sender/kassa_webhook_sender/engine/dispatcher.py": 431,
}
FUNCTION_ALLOWANCES = {
    "dev/kassa_dev/chaos/__main__.py:main": 82,
    "dev/kassa_dev/chaos/checks.py:check": 228,
    "libs/common/kassa_common/cli.py:build_parser": 107,
    "libs/common/kassa_common/payments/create.py:create_payment": 134,
    "services/api/kassa_api/openapi.py:_cross_field_rules": 93,
    "services/api/kassa_api/openapi.py:build": 93,
}


def sized_sources() -> dict[str, str]:
    """The product's, the development tooling's and the Python client's modules, by path."""
    paths = [m.path for m in MODULES.values()] + list((ROOT / "clients" / "python").glob("kassa_*/**/*.py"))
    return {p.relative_to(ROOT).as_posix(): p.read_text() for p in paths}


def oversized(sources: dict[str, str]) -> dict[str, int]:
    """Files over MAX_FILE_LINES and functions (``path:Class.name``) over MAX_FUNCTION_LINES."""
    found: dict[str, int] = {}
    for path, text in sources.items():
        if (n := len(text.splitlines())) > MAX_FILE_LINES:
            found[path] = n

        def visit(node: ast.AST, prefix: str, path: str = path) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if not isinstance(child, ast.ClassDef) and length > MAX_FUNCTION_LINES:
                        found[f"{path}:{name}"] = length
                    visit(child, f"{name}.")

        visit(ast.parse(text), "")
    return found


def size_problems(found: dict[str, int], allowed: dict[str, int]) -> list[str]:
    grown = [f"{k}: {n} lines (cap {allowed.get(k)})" for k, n in found.items() if n > allowed.get(k, 0)]
    stale = [f"{k}: under the cap now, remove its allowance" for k in allowed if k not in found]
    return sorted(grown + stale)


def test_files_and_functions_stay_under_their_caps():
    assert size_problems(oversized(sized_sources()), FILE_ALLOWANCES | FUNCTION_ALLOWANCES) == []


def test_the_size_check_would_see_a_new_offender_a_grown_one_and_a_stale_allowance():
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    found = oversized({"probe.py": f"def long():\n{body}\n" + "\n" * 320})
    assert found == {"probe.py": 402, "probe.py:long": 82}
    assert size_problems(found, {"probe.py": 401, "probe.py:long": 82, "gone.py": 500}) == [
        "gone.py: under the cap now, remove its allowance",
        "probe.py: 402 lines (cap 401)",
    ]


# Webhook deliveries and their attempts are written by the delivery modules alone: the
# domain's (``kassa_common.webhooks``: redelivery) and the sender's (intake, channel).
DELIVERY_WRITERS = ("kassa_common.webhooks", "kassa_webhook_sender.webhooks")


def delivery_writes(module: Module) -> list[str]:
    return row_writes(module, "WebhookDelivery", "webhook_deliveries", {"last_status_code"}) + row_writes(
        module, "DeliveryAttempt", "delivery_attempts", {"duration_ms", "response_body", "next_retry_at"}
    )


def test_only_the_delivery_modules_write_webhook_deliveries():
    writers = [n for n, m in MODULES.items() if delivery_writes(m)]
    assert writers and all(any(in_package(n, p) for p in DELIVERY_WRITERS) for n in writers), writers
    outside = [m for name, m in MODULES.items() if not any(in_package(name, p) for p in DELIVERY_WRITERS)]
    assert [w for m in outside for w in delivery_writes(m)] == []


def test_the_delivery_write_check_would_see_a_write():
    probe = Module(
        "probe",
        ROOT / "probe.py",
        ast.parse(
            "row.last_status_code = 500\ns.add(WebhookDelivery(id=1))\n"
            "s.execute(sa.update(WebhookDelivery).values(a=1))\nDeliveryAttempt(attempt=1)\n"
            "q = 'UPDATE webhook_deliveries SET status = 1'\nq = 'insert into delivery_attempts (id) values (1)'\n"
        ),
    )
    assert len(delivery_writes(probe)) == 6
