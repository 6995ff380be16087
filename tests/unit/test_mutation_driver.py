"""``make mutate``'s driver (kassa_dev.mutate): which mutants it makes, and that each one is
a real, compilable change of one point of the module, never of its text or annotations."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kassa_dev import mutate

pytestmark = pytest.mark.unit

SAMPLE = '''"""A docstring with 1 number."""
import logging

log = logging.getLogger("x")


def f(a: int, b: int = 3) -> bool:
    """Say whether 2 > 1."""
    log.info("a is %d of %d", a, 10)
    if not a < b and a != 0:
        return min(a, b) + 1 > -2
    for i in range(a):
        if i:
            break
    return True
'''


@pytest.fixture
def sample(tmp_path, monkeypatch) -> mutate.Target:
    (tmp_path / "kassa_sample").mkdir()
    (tmp_path / "kassa_sample" / "m.py").write_text(SAMPLE)
    monkeypatch.setitem(mutate.PACKAGES, "kassa_sample", tmp_path)
    return mutate.Target("kassa_sample/m.py", unit=())


def test_every_mutation_point_of_the_code_and_none_in_text_annotations_or_log_calls(sample):
    got = [(m.line, m.description) for m in mutate.mutants_of(sample)]
    assert got == [
        (7, "`3` -> `4`"),  # a default is code
        (10, "`and` -> `or`"),
        (10, "`not x` -> `x`"),
        (10, "`!=` -> `==`"),
        (10, "`<` -> `<=`"),
        (10, "`0` -> `1`"),
        (11, "`return x` -> `return None`"),
        (11, "`>` -> `>=`"),
        (11, "`+` -> `-`"),
        (11, "`-2` -> `2`"),
        (11, "`min(...)` -> `max(...)`"),
        (11, "`1` -> `2`"),
        (11, "`2` -> `3`"),
        (14, "`break` -> `continue`"),
        (15, "`return x` -> `return None`"),
        (15, "`True` -> `False`"),
    ]


def test_each_mutant_compiles_and_differs_from_the_module_in_one_place(sample):
    original = ast.dump(ast.parse(SAMPLE))
    sources = set()
    for m in mutate.mutants_of(sample):
        source = mutate.mutated_source(m)
        compile(source, "m.py", "exec")
        assert ast.dump(ast.parse(source)) != original, m.label()
        sources.add(source)
    assert len(sources) == len(mutate.mutants_of(sample))  # no two mutants alike


def test_a_mutant_behaves_as_described(sample):
    def f_of(mutant):
        space: dict = {}
        exec(compile(mutate.mutated_source(mutant), "m.py", "exec"), space)  # noqa: S102 - the mutant under test
        return space["f"]

    by_text = {(m.line, m.description): m for m in mutate.mutants_of(sample)}
    assert f_of(by_text[(15, "`True` -> `False`")])(5, 9) is False
    assert f_of(by_text[(11, "`return x` -> `return None`")])(5, 3) is None
    assert f_of(by_text[(11, "`min(...)` -> `max(...)`")])(-1, -5) is True  # max: 0 > -2, min: -4 > -2


def test_the_listed_modules_and_their_focused_tests_exist():
    root = mutate.ROOT
    for target in mutate.TARGETS:
        assert mutate.source_of(target).is_file(), target.path
        assert target.unit or target.integration, target.path
        for test in target.unit + target.integration:
            assert (root / test).is_file(), test
    assert Path(mutate.__file__).resolve().is_relative_to(root)


def test_a_line_marked_no_mutate_makes_no_mutant_and_is_counted(sample, tmp_path):
    marked = SAMPLE.replace("    return True\n", "    return True  # pragma: no mutate\n")
    (tmp_path / "kassa_sample" / "m.py").write_text(marked)
    got = [(m.line, m.description) for m in mutate.mutants_of(sample)]
    assert (15, "`True` -> `False`") not in got and (15, "`return x` -> `return None`") not in got
    assert (14, "`break` -> `continue`") in got and len(got) == 14
    assert mutate.excluded_lines(marked) == {15}
    # the other mutants still change the line they name, the marked one left as it was
    m = next(m for m in mutate.mutants_of(sample) if m.line == 14)
    assert "continue" in mutate.mutated_source(m) and "return True" in mutate.mutated_source(m)


def test_list_with_line_shows_only_the_mutants_of_those_lines(sample, monkeypatch, capsys):
    monkeypatch.setattr(mutate, "TARGETS", (sample,))
    monkeypatch.setattr(mutate.signal, "signal", lambda *_: None)  # the test process keeps its handlers
    assert mutate.main(["--list", "--line", "14", "--line", "15"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "kassa_sample/m.py:14: `break` -> `continue`",
        "kassa_sample/m.py:15: `return x` -> `return None`",
        "kassa_sample/m.py:15: `True` -> `False`",
        "kassa_sample/m.py: 0 line(s) excluded (# pragma: no mutate)",
    ]
