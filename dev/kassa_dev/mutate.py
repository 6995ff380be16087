"""``make mutate``: mutation testing of the settlement, transition, scanner and EVM-reading
modules (docs/mutation-testing.md).

Each module is parsed with ``ast``; every mutation point gets one mutant, in the spirit of
mutmut: a comparison flipped (``<`` to ``<=``, ``==`` to ``!=``, ``in`` to ``not in``...),
an arithmetic operator swapped, ``and``/``or`` swapped, a ``not`` dropped, a number moved
by one, ``True``/``False`` swapped, ``min``/``max`` swapped, ``break``/``continue``
swapped, a returned value replaced by ``None``. Text (log messages,
error reasons, docstrings), type annotations and the arguments of logging calls are not
mutated: they decide nothing. Nor is a line marked ``# pragma: no mutate`` (as mutmut
does): an equivalent mutant that no test can tell apart, each listed with its reason in
docs/mutation-testing.md; the run reports how many lines each module excludes so.

The mutants never touch the working tree. The packages concerned are copied once to a
temporary directory, put first on ``PYTHONPATH`` (ahead of the editable installs, for the
test process and every process it starts), and each mutant is written there in turn, then
the module's focused tests run against it (``pytest -x -p no:randomly``): unit tests first,
the integration tests (real PostgreSQL, anvil) only if the unit tests let it through. A
mutant is killed when a test fails or the run exceeds its timeout (a mutant that loops).
No bytecode is written, so a stale ``.pyc`` never stands in for a mutant.

    python -m kassa_dev.mutate                   # every module (~20 minutes)
    python -m kassa_dev.mutate --module quorum   # one module (name or path fragment)
    python -m kassa_dev.mutate --list            # the mutants, without running them
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kassa_dev.mutate_targets import TARGETS, Target

ROOT = Path(__file__).resolve().parents[2]

# Package directories copied to the overlay: (its parent in the repository, the package).
PACKAGES = {
    "kassa_common": ROOT / "libs" / "common",
    "kassa_chain_watcher": ROOT / "services" / "chain-watcher",
}


def source_of(target: Target) -> Path:
    package = target.path.split("/", 1)[0]
    return PACKAGES[package] / target.path


# --- the mutations -------------------------------------------------------------------------

COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
BINARY = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.Pow: ast.Mult,
}
BOOL = {ast.And: ast.Or, ast.Or: ast.And}
SYMBOL = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Pow: "**",
    ast.And: "and",
    ast.Or: "or",
}
LOGGERS = {"log", "logger", "logging"}
PRAGMA = "# pragma: no mutate"


@dataclass(frozen=True)
class Mutant:
    target: Target
    index: int  # of the node in the walk order of the module's tree
    kind: str
    line: int
    description: str

    def label(self) -> str:
        return f"{self.target.path}:{self.line}: {self.description}"


def _skipped(tree: ast.AST) -> set[int]:
    """Ids of the nodes never mutated: docstrings, annotations, logging calls' arguments."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                drop(body[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            drop(node.returns)
            for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
                drop(arg.annotation)
            for arg in (node.args.vararg, node.args.kwarg):
                if arg is not None:
                    drop(arg.annotation)
        if isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in LOGGERS
        ):
            drop(node)
        if isinstance(node, (ast.ImportFrom, ast.Import)):
            drop(node)
        # ``log = logging.getLogger(...)`` and ``if TYPE_CHECKING:`` decide nothing tested.
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            drop(node)
    return skip


def excluded_lines(source: str) -> set[int]:
    """The lines marked ``# pragma: no mutate`` (numbered from 1): no mutant starts there."""
    return {n for n, text in enumerate(source.splitlines(), 1) if PRAGMA in text}


def _points(tree: ast.AST, excluded: set[int] = frozenset()) -> list[tuple[int, str, int, str]]:  # noqa: C901 - one branch per mutation operator
    """(node index, kind, line, description) of every mutation point of ``tree`` outside
    the ``excluded`` lines."""
    skip = _skipped(tree)
    points = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)
        if line in excluded:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in COMPARE:
                    points.append(
                        (index, f"compare:{i}", line, f"`{SYMBOL[type(op)]}` -> `{SYMBOL[COMPARE[type(op)]]}`")
                    )
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in BINARY:
            points.append((index, "binop", line, f"`{SYMBOL[type(node.op)]}` -> `{SYMBOL[BINARY[type(node.op)]]}`"))
        elif isinstance(node, ast.BoolOp):
            points.append((index, "boolop", line, f"`{SYMBOL[type(node.op)]}` -> `{SYMBOL[BOOL[type(node.op)]]}`"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            points.append((index, "not", line, "`not x` -> `x`"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            points.append((index, "negate", line, f"`-{node.operand.value!r}` -> `{node.operand.value!r}`"))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            points.append((index, "bool", line, f"`{node.value}` -> `{not node.value}`"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            points.append((index, "number", line, f"`{node.value}` -> `{node.value + 1}`"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            other = "max" if node.func.id == "min" else "min"
            points.append((index, "minmax", line, f"`{node.func.id}(...)` -> `{other}(...)`"))
        elif isinstance(node, ast.Break):
            points.append((index, "break", line, "`break` -> `continue`"))
        elif isinstance(node, ast.Continue):
            points.append((index, "continue", line, "`continue` -> `break`"))
        elif (
            isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            points.append((index, "return", line, "`return x` -> `return None`"))
    return points


def mutants_of(target: Target) -> list[Mutant]:
    source = source_of(target).read_text()
    points = _points(ast.parse(source), excluded_lines(source))
    mutants = [Mutant(target, index, kind, line, text) for index, kind, line, text in points]
    return sorted(mutants, key=lambda m: (m.line, m.index, m.kind))


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse(source_of(mutant.target).read_text())
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)
    kind = mutant.kind
    if kind.startswith("compare:"):
        i = int(kind.split(":")[1])
        node.ops[i] = COMPARE[type(node.ops[i])]()
    elif kind == "binop":
        node.op = BINARY[type(node.op)]()
    elif kind == "boolop":
        node.op = BOOL[type(node.op)]()
    elif kind == "not" or kind == "negate":
        _replace(tree, node, node.operand)
    elif kind == "bool":
        node.value = not node.value
    elif kind == "number":
        node.value += 1
    elif kind == "minmax":
        node.func.id = "max" if node.func.id == "min" else "min"
    elif kind == "break":
        _replace(tree, node, ast.Continue())
    elif kind == "continue":
        _replace(tree, node, ast.Break())
    elif kind == "return":
        node.value = ast.Constant(None)
    else:  # pragma: no cover - a kind added above without its mutation
        raise ValueError(kind)
    return ast.unparse(ast.fix_missing_locations(tree))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return
    raise LookupError("node not found")


# --- running -------------------------------------------------------------------------------


@dataclass
class Result:
    target: Target
    killed: int = 0
    survivors: list[Mutant] = field(default_factory=list)
    excluded: int = 0  # lines marked ``# pragma: no mutate``

    @property
    def total(self) -> int:
        return self.killed + len(self.survivors)


def pytest_passes(files: tuple[str, ...], timeout: float) -> tuple[bool, float]:
    """Whether ``files`` pass (a timeout counts as a failure), and how long they took.

    The run is a fork of this process, which has imported pytest and every third-party
    library the tests use (``preload``) but none of the project's modules: the child imports
    those afresh, the mutant among them, without paying the interpreter's start-up again.
    ``files`` is never empty: pytest given no file would run the whole suite."""
    if not files:
        raise ValueError("no test files to run")
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: its own process group, so a timeout takes down what it started
        code = 3
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            code = int(pytest.main(["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *files]))
        finally:
            os._exit(code)
    deadline = started + timeout
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status) == 0, time.monotonic() - started
            if time.monotonic() > deadline:
                return False, time.monotonic() - started
            time.sleep(0.05)
    finally:
        try:
            os.killpg(pid, signal.SIGKILL)  # what the tests left running, or the loop that timed out
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def preload(targets: list[Target]) -> None:
    """Import, in this process, the third-party modules the focused tests import, so every
    forked run starts with them loaded. The list comes from a collection run in a child."""
    files = sorted({f for t in targets for f in t.unit + t.integration})
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "kassa_dev.mutate", *files],
            cwd=ROOT,
            env=dict(os.environ, KASSA_MUTATE_MODULES=out.name),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        names = out.read().split()
    for name in names:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001, S110 - a module that only imports in its package's context: loaded later
            pass


def pytest_collection_finish(session) -> None:  # the collection run's hook (``preload``)
    out = os.environ.get("KASSA_MUTATE_MODULES")
    if not out:
        return
    names = []
    for name, module in list(sys.modules.items()):
        top = name.split(".", 1)[0]
        where = getattr(module, "__file__", None) or ""
        ours = where.startswith(str(ROOT)) and "site-packages" not in where
        if top.startswith("kassa_") or top in ("tests", "conftest", "__main__") or ours:
            continue
        names.append(name)
    Path(out).write_text("\n".join(names))


def run(targets: list[Target], verbose: bool, lines: frozenset[int] = frozenset()) -> list[Result]:
    overlay = Path(tempfile.mkdtemp(prefix="kassa-mutants-"))
    try:
        for package, parent in PACKAGES.items():
            shutil.copytree(parent / package, overlay / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        # The overlay goes first for the forked runs and for every process a test starts.
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        sys.dont_write_bytecode = True
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(overlay), os.environ.get("PYTHONPATH")]))
        sys.path.insert(0, str(overlay))
        os.chdir(ROOT)
        preload(targets)
        loaded = sorted(n for n in sys.modules if n.split(".", 1)[0] in PACKAGES)
        if loaded:
            raise SystemExit(f"the project's modules must not be loaded before the mutants: {loaded[:5]}")
        return [run_target(target, overlay, verbose, lines) for target in targets]
    finally:
        shutil.rmtree(overlay, ignore_errors=True)


def run_target(target: Target, overlay: Path, verbose: bool, lines: frozenset[int] = frozenset()) -> Result:
    copy_path = overlay / target.path
    original = copy_path.read_text()
    result = Result(target, excluded=len(excluded_lines(source_of(target).read_text())))
    mutants = [m for m in mutants_of(target) if not lines or m.line in lines]
    # The unmutated module must pass its tests, and their time sets the timeouts.
    ok_unit, unit_time = pytest_passes(target.unit, timeout=600) if target.unit else (True, 0.0)
    ok_integration, integration_time = (True, 0.0)
    if target.integration:
        ok_integration, integration_time = pytest_passes(target.integration, timeout=1200)
    if not (ok_unit and ok_integration):
        raise SystemExit(f"{target.path}: the focused tests fail without any mutation; fix them first")
    print(
        f"{target.path}: {len(mutants)} mutants, {result.excluded} line(s) excluded (tests: unit {unit_time:.0f} s, "
        f"integration {integration_time:.0f} s unmutated)",
        flush=True,
    )
    try:
        for mutant in mutants:
            copy_path.write_text(mutated_source(mutant))
            alive = True
            if target.unit:
                alive, _ = pytest_passes(target.unit, timeout=unit_time * 3 + 30)
            if alive and target.integration:
                alive, _ = pytest_passes(target.integration, timeout=integration_time * 3 + 60)
            if alive:
                result.survivors.append(mutant)
                print(f"  survived  {mutant.label()}", flush=True)
            else:
                result.killed += 1
                if verbose:
                    print(f"  killed    {mutant.label()}", flush=True)
    finally:
        copy_path.write_text(original)
    print(f"  {target.path}: {result.killed}/{result.total} killed ({score(result.killed, result.total)})", flush=True)
    return result


def score(killed: int, total: int) -> str:
    return f"{100 * killed / total:.1f} %" if total else "n/a"


def report(results: list[Result]) -> int:
    killed = sum(r.killed for r in results)
    total = sum(r.total for r in results)
    print("\nMutation score (killed/mutants, score, lines excluded by the pragma)")
    for r in results:
        print(f"  {r.target.path:45} {r.killed:4}/{r.total:<4} {score(r.killed, r.total):>8} {r.excluded:4}")
    excluded = sum(r.excluded for r in results)
    print(f"  {'overall':45} {killed:4}/{total:<4} {score(killed, total):>8} {excluded:4}")
    survivors = [m for r in results for m in r.survivors]
    if survivors:
        print(f"\nSurvivors ({len(survivors)}):")
        for m in survivors:
            print(f"  {m.label()}")
    return 0 if total and killed / total >= 0.9 else 1


def _stop(signum, _frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--module", action="append", default=[], help="only the modules whose path contains this (repeatable)"
    )
    parser.add_argument(
        "--line",
        action="append",
        type=int,
        default=[],
        help="only the mutants of this line (repeatable; to check survivors again)",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--verbose", action="store_true", help="print the killed mutants too")
    args = parser.parse_args(argv)
    # Stopped from outside (SIGTERM, or SIGINT where a shell left it ignored): unwind, so the
    # running tests are killed and the temporary copy removed.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    targets = [t for t in TARGETS if not args.module or any(m in t.path for m in args.module)]
    if not targets:
        parser.error("no module matches")
    if args.list:
        for t in targets:
            for m in mutants_of(t):
                if not args.line or m.line in args.line:
                    print(m.label())
            print(f"{t.path}: {len(excluded_lines(source_of(t).read_text()))} line(s) excluded ({PRAGMA})")
        return 0
    return report(run(targets, args.verbose, frozenset(args.line)))


if __name__ == "__main__":
    sys.exit(main())
