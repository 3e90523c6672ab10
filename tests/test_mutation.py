"""tests/mutation.py's mutants: which nodes it changes and how, on a small module's source (no
pytest run: `make mutation` does those)."""

from __future__ import annotations

import ast
from pathlib import Path

from mutation import (
    ROOT,
    SURVIVORS,
    apply,
    key,
    mutants,
    read_survivors,
    selected_tests,
    statement_lines,
    without_paths,
)

SOURCE = '''"""A docstring with 3 in it."""


def f(x: int = 2, y: Literal[5] = None) -> Literal[6]:
    """Another docstring: 7."""
    z = x + 1
    z *= 4
    return 0 < z <= 10 and x != True
'''


def test_mutants_cover_comparisons_arithmetic_and_integers_but_not_annotations_or_bools():
    """Catches: integers in annotations (Literal[5]) or booleans mutated; a chained
    comparison's second operator missed; an augmented assignment skipped."""
    got = [(m.line, m.change) for m in mutants(SOURCE)]
    assert sorted(got) == sorted(
        [
            (4, "2 -> 3"),  # the default value, not the annotation
            (6, "+ -> -"),
            (6, "1 -> 2"),
            (7, "* -> /"),
            (7, "4 -> 5"),
            (8, "< -> <="),
            (8, "<= -> <"),
            (8, "!= -> =="),
            (8, "0 -> 1"),
            (8, "10 -> 11"),
        ]
    )


def test_apply_changes_exactly_one_thing():
    """Catches: a mutant applied to the wrong node (ast.walk indices not stable across parses)
    or to every operator of a chained comparison."""
    by_change = {m.change: m for m in mutants(SOURCE)}
    original = ast.dump(ast.parse(SOURCE))
    for change, want in [
        ("<= -> <", "return 0 < z < 10 and x != True"),
        ("< -> <=", "return 0 <= z <= 10 and x != True"),
        ("* -> /", "z /= 4"),
        ("10 -> 11", "return 0 < z <= 11 and x != True"),
    ]:
        mutated = apply(SOURCE, by_change[change])
        assert want in mutated, (change, mutated)
        assert ast.dump(ast.parse(mutated)) != original


def test_survivor_table_rows_are_keyed_by_module_change_and_code():
    """Catches: a `|` escaped inside a code cell splitting the row, the header or other lines read
    as rows, backticks kept in the key (no survivor would then match)."""
    table = "\n".join(
        [
            "# Explained survivors",
            "| module | line | mutation | code | why |",
            "|---|---|---|---|---|",
            "| specdec_lib/a.py | 3 | `< -> <=` | `x = a \\| b if n < 2 else c` | equivalent |",
        ]
    )
    assert read_survivors(table) == {
        ("specdec_lib/a.py", "< -> <=", "x = a | b if n < 2 else c"): "equivalent"
    }


def test_the_committed_survivor_table_parses_and_names_current_mutants():
    """Catches: a malformed row in tests/mutation_survivors.md, or a row whose code no longer
    matches any mutant of its module (the explanation would silently cover nothing)."""
    explained = read_survivors(SURVIVORS.read_text(encoding="utf-8"))
    assert explained
    for module, change, code in explained:
        source = (ROOT / module).read_text(encoding="utf-8")
        lines = source.splitlines()
        keys = {key(Path(module), m, lines) for m in mutants(source)}
        assert (module, change, code) in keys, (module, change, code)


def test_a_mutant_runs_the_tests_that_reached_its_statement():
    """Catches: a mutant reached at import (a default argument) run against fewer than all tests;
    a mutant inside a multi-line statement missed because the trace saw another of its lines; a
    test that never reached the statement run anyway, or one that did left out."""
    every = mutants(SOURCE)
    lines_of = statement_lines(SOURCE)
    by_change = {m.change: m for m in every}
    reached = {
        "": {4},  # the def line: run at import
        "t1": {6, 8},
        "t2": {8},
    }
    assert selected_tests(by_change["2 -> 3"], lines_of, reached) is None
    assert selected_tests(by_change["+ -> -"], lines_of, reached) == ["t1"]
    assert selected_tests(by_change["* -> /"], lines_of, reached) == []
    assert selected_tests(by_change["10 -> 11"], lines_of, reached) == ["t1", "t2"]
    multi = "def g(a):\n    return (a +\n            1)\n"
    plus = next(m for m in mutants(multi) if m.change == "+ -> -")
    assert selected_tests(plus, statement_lines(multi), {"t": {3}}) == ["t"]


def test_the_named_tests_replace_the_paths_but_keep_the_options(tmp_path):
    """Catches: the test files kept (every test would run again), or an option's value such as
    -k's expression dropped."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    args = ["tests/test_a.py", "-x", "-k", "not slow", "tests/test_a.py::test_b", "-q"]
    assert without_paths(tmp_path, args) == ["-x", "-k", "not slow", "-q"]
