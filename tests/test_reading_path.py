"""specdec_lib/README.md's reading path stays true: every `file.py:function` it names is defined
in that file, and each numbered step's function is called by an earlier step's, from
`generate.py` down to `core/verify.py`'s two rules.

Reads the modules' source with `ast`; imports nothing of the library.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "specdec_lib"
README = LIB / "README.md"
NAMED = re.compile(r"`([\w/]+\.py):([\w.]+)`")  # `core/decode.py:speculative_decode`


def definitions(path: Path) -> dict[str, ast.AST]:
    """A module's top-level functions and classes by name, and its methods as Class.method."""
    out: dict[str, ast.AST] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out[node.name] = node
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    out[f"{node.name}.{sub.name}"] = sub
    return out


def called_names(node: ast.AST) -> set[str]:
    """The names a function calls: `f(..)` and `x.f(..)` both give f."""
    out = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            fn = call.func
            out.add(fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", ""))
    return out


def steps() -> list[list[tuple[str, str]]]:
    """The numbered path's steps, each as the (file, name) pairs it names."""
    text = README.read_text(encoding="utf-8")
    return [NAMED.findall(line) for line in re.findall(r"^\d+\. (.*)$", text, re.M)]


def test_every_function_the_library_readme_names_is_defined_in_the_file_it_names():
    named = NAMED.findall(README.read_text(encoding="utf-8"))
    assert len(named) >= 6, named
    missing = [f"{f}:{n}" for f, n in named if n not in definitions(LIB / f)]
    assert missing == []


def test_the_numbered_path_runs_by_calls_from_generate_to_the_verifier():
    path = steps()
    assert path[0] == [("generate.py", "Generator.generate_ids")]
    assert set(path[-1]) == {
        ("core/verify.py", "greedy_verify"),
        ("core/verify.py", "speculative_verify"),
    }
    for j, step in enumerate(path[1:], start=1):
        callers = set().union(
            *(called_names(definitions(LIB / f)[n]) for earlier in path[:j] for f, n in earlier)
        )
        for f, name in step:
            assert name.split(".")[-1] in callers, f"{f}:{name} is called by no earlier step"
