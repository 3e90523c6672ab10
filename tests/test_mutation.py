"""tests/mutation.py's mutants: which nodes it changes and how, on a small module's source (no
pytest run: `make mutation` does those)."""

from __future__ import annotations

import ast

from mutation import apply, mutants

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
