"""The package's layers, read from its source: no import cycle, arrows that run one way, facades
only at the edges, the torch-free half loads no torch, and a top level that stays small.

Reads the import statements of every module under specdec_lib/ with `ast` (imports inside
functions count; those under `if TYPE_CHECKING:` do not, since they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "specdec_lib"
FACADES = ("specdec_lib.study", "specdec_lib.report")  # the notebooks' and the book's APIs
GONE = ("specdec_lib.plots", "specdec_lib.present")  # facades that must not come back


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The specdec_lib modules `path` imports at run time (a submodule import also runs its
    parent packages' __init__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            for i in range(2, len(parts) + 1):  # the module and the packages it runs
                prefix = ".".join(parts[:i])
                implicit_parent = i < len(parts) and me.startswith(prefix + ".")
                if prefix in modules and prefix != me and not implicit_parent:
                    found.add(prefix)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PKG.rglob("*.py")}
    modules = set(paths)
    return {m: imports_of(p, modules) for m, p in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_specdec_lib_modules():
    found = cycles(import_graph())
    assert found == [], f"import cycles: {found}"


def test_facades_only_at_the_edges():
    """study (notebooks) and report (the book) import packages; nothing in the library imports
    them, and the old facades plots/present are gone."""
    graph = import_graph()
    assert not set(GONE) & set(graph), f"facades came back: {set(GONE) & set(graph)}"
    users = {m: sorted(set(FACADES) & deps) for m, deps in graph.items() if set(FACADES) & deps}
    users = {m: d for m, d in users.items() if m not in FACADES}
    assert users == {}, f"library modules that import a facade: {users}"


@pytest.mark.parametrize(
    ("layer", "must_not_import"),
    [
        ("specdec_lib.core", ("specdec_lib.drafters", "specdec_lib.runner", "specdec_lib.bench")),
        ("specdec_lib.drafters", ("specdec_lib.runner", "specdec_lib.bench")),
        ("specdec_lib.measure", ("specdec_lib.runner", "specdec_lib.bench")),
        ("specdec_lib.results", ("specdec_lib.environment.tracking", "specdec_lib.runner")),
        ("specdec_lib.analysis", ("specdec_lib.reporting", "specdec_lib.runner")),
        ("specdec_lib.runner", ("specdec_lib.reporting", "specdec_lib.environment.colab")),
        ("specdec_lib.bench", ("specdec_lib.runner",)),
    ],
)
def test_arrows_run_one_way(layer, must_not_import):
    graph = import_graph()
    wrong = {
        m: sorted(d for d in deps if d.startswith(must_not_import))
        for m, deps in graph.items()
        if m == layer or m.startswith(layer + ".")
    }
    wrong = {m: d for m, d in wrong.items() if d}
    assert wrong == {}, f"{layer} imports what it must not know: {wrong}"


@pytest.mark.parametrize(
    "module",
    [
        "specdec_lib.report",
        "specdec_lib.analysis.verdicts",
        "specdec_lib.results.store",
        "specdec_lib.results.catalog",
        "specdec_lib.reporting.readings",
        "specdec_lib.reporting.claims",
        "specdec_lib.reporting.reproduce",
    ],
)
def test_the_torch_free_half_loads_no_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", f"importing {module} loads torch"


def test_the_top_level_shows_the_layers():
    """At most ten modules beside the packages."""
    modules = sorted(
        p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    assert len(modules) <= 10, modules
