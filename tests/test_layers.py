"""The packages' layers, read from their source: the library (specdec_lib) small and blind to the
study (specdec_study), no import cycle, arrows that run one way, facades only at the edges, the
torch-free half loads no torch, a top level that stays small, and plain imports (no
`"module:function"` string, no module `__getattr__`, but the drafter grammar's lazy table).

Reads the import statements of every module under specdec_lib/ and specdec_study/ with `ast`
(imports inside functions count; those under `if TYPE_CHECKING:` do not, since they never run).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "specdec_lib"
STUDY = ROOT / "specdec_study"
LIBRARY_MAX_LINES = 7_000  # a library a newcomer reads in an afternoon
FACADES = ("specdec_study.study", "specdec_study.pages")  # the notebooks' and the book's APIs
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


CATALOG = "specdec_study.results.catalog"
EXPERIMENTS = STUDY / "experiments"  # the catalog imports each of its modules (found, not named)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, with the imports the catalog makes by finding
    the experiment modules (`results.catalog.modules`): edges no import statement shows."""
    paths = {module_name(p): p for pkg in (PKG, STUDY) for p in pkg.rglob("*.py")}
    modules = set(paths)
    graph = {m: imports_of(p, modules) for m, p in paths.items()}
    found = {module_name(p) for p in EXPERIMENTS.glob("*.py") if p.name != "__init__.py"}
    graph[CATALOG] |= found
    return graph


def test_the_graph_holds_the_catalogs_found_experiment_modules():
    """The catalog imports every experiment module by finding it; the graph shows those edges,
    so that a cycle through them (an experiment module importing what reads the catalog) is
    found like any other."""
    assert "specdec_study.experiments.k_sweep" in import_graph()[CATALOG]


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


def test_the_library_never_imports_the_study():
    """Nothing in specdec_lib imports specdec_study, but `python -m specdec_lib` (its __main__
    runs the study's command line under the name users type; no module imports __main__)."""
    graph = import_graph()
    wrong = {
        m: sorted(d for d in deps if d.startswith("specdec_study"))
        for m, deps in graph.items()
        if m.startswith("specdec_lib") and m != "specdec_lib.__main__"
    }
    assert {m: d for m, d in wrong.items() if d} == {}


def test_the_library_is_small():
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in PKG.rglob("*.py"))
    assert lines <= LIBRARY_MAX_LINES, f"specdec_lib has {lines} lines"


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
        (
            "specdec_lib.core",
            ("specdec_lib.drafters", "specdec_study.runner", "specdec_study.bench"),
        ),
        ("specdec_lib.drafters", ("specdec_study.runner", "specdec_study.bench")),
        ("specdec_lib.measure", ("specdec_study.runner", "specdec_study.bench")),
        (  # the declarations are data: what runs and draws them sits above, never named here
            "specdec_study.results",
            (
                "specdec_study.environment.tracking",
                "specdec_study.runner",
                "specdec_study.reporting",
            ),
        ),
        ("specdec_study.analysis", ("specdec_study.reporting", "specdec_study.runner")),
        ("specdec_study.runner", ("specdec_study.reporting", "specdec_study.environment.colab")),
        ("specdec_study.bench", ("specdec_study.runner",)),
        (  # an experiment module runs through the Lab it is handed: no runner, no torch
            "specdec_study.experiments",
            (
                "specdec_study.runner",
                "specdec_study.bench",
                "specdec_study.study",
                "specdec_study.pages",
                CATALOG,
            ),
        ),
        (  # where the study runs: leaves that the layers above import, never the reverse
            "specdec_study.environment",
            tuple(
                f"specdec_study.{p}"
                for p in ("analysis", "bench", "cli", "pages", "reporting", "results", "runner")
            )
            + ("specdec_study.study",),
        ),
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
        "specdec_study.pages",
        "specdec_study.analysis.verdicts",
        "specdec_study.results.store",
        "specdec_study.results.catalog",
        "specdec_study.experiments.agreement",
        "specdec_study.experiments.baseline",
        "specdec_study.experiments.bigram_draft",
        "specdec_study.experiments.context_sweep",
        "specdec_study.experiments.implementations",
        "specdec_study.experiments.k_sweep",
        "specdec_study.experiments.peers",
        "specdec_study.experiments.quick",
        "specdec_study.experiments.speculative_sampling",
        "specdec_study.experiments.transformer_draft",
        "specdec_study.reporting.readings",
        "specdec_study.reporting.claims",
        "specdec_study.reporting.reproduction_page",
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


# a lazy reference `package.module:name` (an f-string's fields count as names); the drafter spec
# grammar keeps its lazy table (a name a user types picks the builder), nothing else may
REFERENCE = re.compile(r"^(?:[A-Za-z_]\w*|\{\})(?:\.(?:[A-Za-z_]\w*|\{\}))+:[A-Za-z_]\w*$")
LAZY_TABLE = PKG / "drafters" / "registry.py"


def indirections(source: str) -> list[str]:
    """The `"package.module:name"` strings and the module-level `__getattr__`/`__dir__` (names
    made up when asked for) in one module's source."""
    tree = ast.parse(source)
    found = [
        f"def {node.name} (line {node.lineno})"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__")
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        else:
            continue
        if REFERENCE.match(text):
            found.append(f"{text!r} (line {node.lineno})")
    return found


def test_the_indirection_finder_finds_a_planted_reference_and_getattr():
    """The check below, shown failing: a planted `"module:function"` string (plain or an
    f-string) and a module `__getattr__` are found; drafter specs and times are not."""
    planted = (
        'RUN = "specdec_study.runner.single:run_baseline"\n'
        'LAZY = f"{PKG}.base:build"\n'
        "def __getattr__(name):\n    raise AttributeError(name)\n"
        'OK = ("hf:greedy", "model:google/gemma-3-1b-pt", "adaptive:self:2", "12:30", "a.b: c")\n'
    )
    assert len(indirections(planted)) == 3
    assert indirections((LAZY_TABLE).read_text(encoding="utf-8"))  # the one allowed table


def test_no_module_function_string_or_module_getattr_outside_the_drafter_grammar():
    """Plain imports inside the project: no `"package.module:name"` string names code to load
    later and no module makes its names up in `__getattr__` (issue 40), except the drafter spec
    grammar's lazy table (`specdec_lib/drafters/registry.py`). Planting
    `X = "specdec_study.runner.single:run_baseline"` in specdec_study/study.py fails it."""
    found = {
        str(p.relative_to(ROOT)): hits
        for pkg in (PKG, STUDY)
        for p in sorted(pkg.rglob("*.py"))
        if p != LAZY_TABLE and (hits := indirections(p.read_text(encoding="utf-8")))
    }
    assert found == {}, f"lazy references left: {found}"


# No exceptions: each experiment lives in its one module of `experiments/` and no module
# elsewhere has its name (notebook 04's runner, analysis and reporting modules went or were
# renamed for what they hold: `runner/interleaved.py`, `runner/continuations.py`,
# `reporting/implementation_tables.py`);
# the peers' torch side is `runner/hf_arms.py`; the decomposition's book tables and bars are
# `reporting/decomposition_tables.py` and `reporting/figures/decomposition_bars.py` beside
# `analysis/decomposition.py`; the library's tree verification is `core/token_tree.py`, beside
# the tree drafter `drafters/tree.py`.
def shared_names(paths: list[Path]) -> dict[str, set[str]]:
    """File name -> the folders holding a module of that name, where more than one does."""
    where: dict[str, set[str]] = {}
    for p in paths:
        if p.name not in ("__init__.py", "__main__.py"):
            where.setdefault(p.name, set()).add(p.parent.relative_to(ROOT).as_posix())
    return {name: dirs for name, dirs in where.items() if len(dirs) > 1}


def test_no_two_modules_share_a_file_name():
    """Every name says one thing (issue 40). Planted clashes it catches: a library
    `core/sampling.py` beside a study module of that name (the clash this rule removed), and an
    experiment's name taken by a runner module (`runner/agreement.py`, as before the move)."""
    planted = [ROOT / "specdec_lib/core/sampling.py", ROOT / "specdec_study/runner/sampling.py"]
    assert shared_names(planted) == {"sampling.py": {"specdec_lib/core", "specdec_study/runner"}}
    planted = [EXPERIMENTS / "agreement.py", ROOT / "specdec_study/runner/agreement.py"]
    assert shared_names(planted) == {
        "agreement.py": {"specdec_study/experiments", "specdec_study/runner"}
    }
    paths = [p for pkg in (PKG, STUDY) for p in pkg.rglob("*.py")]
    assert shared_names(paths) == {}
