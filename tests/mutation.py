"""A small mutation check (stdlib only): does a test selection notice when a module's code changes?

Each mutant changes one thing in one module, found with `ast`:
- a comparison operator: < <-> <=, > <-> >=, == <-> != (one mutant per operator),
- an arithmetic operator (also in `x op= y`): + <-> -, * <-> /,
- an integer constant: n -> n + 1 (booleans are left alone).
The mutant module is written with `ast.unparse` into a temporary copy of the repository (never
into the working tree), and the given pytest arguments run there. A mutant is killed when pytest
fails (or runs past its time limit); it survives when the tests pass. Prints the score and every
survivor as path:line, the change and the original line.

A survivor is explained when tests/mutation_survivors.md lists it (module, mutation and the
original line's code; the line number there is only a guide, as lines move): an equivalent mutant
or one not worth a test, with the reason. The check fails (exit 1) on any unexplained survivor,
so a new survivor is either killed by a test or explained there; a full run (no --sample) also
names the entries that no longer survive, to be removed.

Before the mutants, two runs check the set-up: the unmutated copy must pass, and a copy whose
module raises on import must fail (so the tests really import the copied module). The unmutated
run is traced (a pytest plugin written into the copy): which lines of the module each test's call
reached. Each mutant then runs only the tests that reached its statement, every test when an
import or a fixture's setup reached it, and none when no test did (it survives, "no test reaches
it"): a test that never runs the changed line behaves the same with the mutant. `--all-tests`
runs every test against every mutant instead.

    python tests/mutation.py specdec_study/analysis/rules.py -- tests/test_rules.py -x -q
    python tests/mutation.py MODULE --sample 10 --seed 0 -- PYTEST_ARGS...   # a random 10
    python tests/mutation.py MODULE --list                                   # mutants only

Knows nothing about the project beyond where its repository root is (this file's parent's parent).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURVIVORS = ROOT / "tests" / "mutation_survivors.md"
# not copied: version control, environments, caches, build outputs
IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "_build", ".cache", "wandb"
)

COMPARE_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
ARITH_SWAP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
}
SYMBOL = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
}


@dataclass(frozen=True)
class Mutant:
    """One change: the node's index in ast.walk order, which operator of it (a comparison can
    chain several), its line and a description."""

    node: int
    slot: int
    line: int
    change: str


def annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a type annotation (changing them changes no behaviour)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anns.append(node.returns)
        if isinstance(node, ast.arg):
            anns.append(node.annotation)
        if isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        for ann in anns:
            if ann is not None:
                out.update(id(n) for n in ast.walk(ann))
    return out


def mutants(source: str) -> list[Mutant]:
    """Every mutant of a module's source, in source order."""
    tree = ast.parse(source)
    skip = annotation_nodes(tree)
    found = []
    for i, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                if type(op) in COMPARE_SWAP:
                    new = COMPARE_SWAP[type(op)]
                    found.append(Mutant(i, j, node.lineno, f"{SYMBOL[type(op)]} -> {SYMBOL[new]}"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITH_SWAP:
            new = ARITH_SWAP[type(node.op)]
            found.append(Mutant(i, 0, node.lineno, f"{SYMBOL[type(node.op)]} -> {SYMBOL[new]}"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            found.append(Mutant(i, 0, node.lineno, f"{node.value} -> {node.value + 1}"))
    return sorted(found, key=lambda m: (m.line, m.node, m.slot))


def apply(source: str, m: Mutant) -> str:
    """The module's source with mutant m applied (re-rendered by ast.unparse)."""
    tree = ast.parse(source)
    node = list(ast.walk(tree))[m.node]
    if isinstance(node, ast.Compare):
        node.ops[m.slot] = COMPARE_SWAP[type(node.ops[m.slot])]()
    elif isinstance(node, (ast.BinOp, ast.AugAssign)):
        node.op = ARITH_SWAP[type(node.op)]()
    elif isinstance(node, ast.Constant):
        node.value = node.value + 1
    else:  # the source changed under us
        raise RuntimeError(f"mutant {m} does not match the source")
    return ast.unparse(tree) + "\n"


# A pytest plugin, written into the copy for one traced run of the unmutated tests: which lines of
# the module each test's call reached ("" for lines reached outside any test's call: imports,
# collection, fixtures' setup and teardown).
TRACER = """
import json, os, sys, threading
import pytest

_TARGET = os.environ["MUTATION_TRACE_TARGET"]
_current = [""]
_lines = {}


def _local(frame, event, arg):
    if event == "line":
        _lines.setdefault(_current[0], set()).add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if frame.f_code.co_filename != _TARGET:
        return None
    _lines.setdefault(_current[0], set()).add(frame.f_lineno)
    return _local


sys.settrace(_global)
threading.settrace(_global)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _current[0] = item.nodeid
    yield
    _current[0] = ""


def pytest_sessionfinish(session):
    with open(os.environ["MUTATION_TRACE_OUT"], "w") as f:
        json.dump({k: sorted(v) for k, v in _lines.items()}, f)
"""
TRACE_PLUGIN = "_mutation_trace"


def statement_lines(source: str) -> dict[int, range]:
    """For each mutable node (by ast.walk index), the lines of its innermost statement (a compound
    statement's header only): a test reached the mutant when it ran one of them."""
    tree = ast.parse(source)
    out: dict[int, range] = {}

    def visit(node: ast.AST, stmt: range) -> None:
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            end = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
            stmt = range(node.lineno, max(node.lineno, end or node.lineno) + 1)
        out[id(node)] = stmt
        for child in ast.iter_child_nodes(node):
            visit(child, stmt)

    visit(tree, range(0))
    return {i: out[id(n)] for i, n in enumerate(ast.walk(tree))}


def selected_tests(
    m: Mutant, lines_of: dict[int, range], reached: dict[str, set[int]]
) -> list[str] | None:
    """The tests whose call reached mutant m, in their order; None when the unmutated run reached
    its statement outside any test's call (an import or fixture: every test may depend on it)."""
    stmt = set(lines_of[m.node])
    if stmt & reached.get("", set()):
        return None
    return [t for t, got in reached.items() if t and stmt & got]


def without_paths(copy: Path, pytest_args: list[str]) -> list[str]:
    """The pytest arguments less the ones naming files or folders (the tests are named instead)."""
    return [a for a in pytest_args if a.startswith("-") or not (copy / a.split("::")[0]).exists()]


Key = tuple[str, str, str]  # (module path, change, the original line's code, stripped)


def read_survivors(text: str) -> dict[Key, str]:
    """The explained survivors of a markdown table `| module | line | mutation | code | why |`
    (code in backticks, a `|` inside a cell written `\\|`): {(module, change, code): why}."""
    out: dict[Key, str] = {}
    for raw in text.splitlines():
        if not raw.startswith("| specdec_lib/"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", raw)[1:-1]]
        if len(cells) != 5:
            raise ValueError(f"{SURVIVORS.name}: not 5 cells: {raw}")
        module, _line, change, code, why = cells
        out[(module, change.strip("`"), code.strip("`"))] = why
    return out


def key(rel: Path, m: Mutant, lines: list[str]) -> Key:
    """The survivor table's key of a mutant: its module, change and original line."""
    return (rel.as_posix(), m.change, lines[m.line - 1].strip())


def run_tests(
    copy: Path, pytest_args: list[str], timeout: float, env: dict[str, str] | None = None
) -> tuple[str, float]:
    """pytest in the copy: "pass", "fail" or "timeout", and the seconds it took."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}  # no stale bytecode
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start
    return ("pass" if proc.returncode == 0 else "fail"), time.monotonic() - start


def check(
    module: Path,
    pytest_args: list[str],
    chosen: list[Mutant],
    source: str,
    explained: dict[Key, str],
    full: bool,
    trace: bool = True,
) -> int:
    """Run every chosen mutant; print the score and the survivors, each explained (listed in
    `explained`) or not. Returns the exit status: 1 when a survivor is unexplained.

    With `trace`, the unmutated run records which tests reach each line of the module, and each
    mutant runs only the tests that reached its statement (all of them when an import or a
    fixture did; none, a survivor, when no test did): a test that never runs the changed line
    cannot tell the mutant apart."""
    rel = module.relative_to(ROOT)
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=IGNORE)
        target = copy / rel
        reached: dict[str, set[int]] | None = None
        if trace:
            (copy / f"{TRACE_PLUGIN}.py").write_text(TRACER, encoding="utf-8")
            out = Path(tmp) / "reached.json"
            env = {
                "MUTATION_TRACE_TARGET": str(target),
                "MUTATION_TRACE_OUT": str(out),
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(copy), os.environ.get("PYTHONPATH")])
                ),
            }
            outcome, base_s = run_tests(copy, ["-p", TRACE_PLUGIN, *pytest_args], 900, env)
            if outcome == "pass":
                reached = {t: set(v) for t, v in json.loads(out.read_text()).items()}
                if not any(reached.values()):  # the trace saw another file: run every test
                    print(f"the trace saw no line of {rel}: every mutant runs every test")
                    reached = None
        else:
            outcome, base_s = run_tests(copy, pytest_args, timeout=900)
        if outcome != "pass":
            print(f"the tests do not pass on the unmutated copy ({outcome}): nothing to measure")
            return 2
        limit = 3 * base_s + 30
        target.write_text(source + "\nraise RuntimeError('mutation canary')\n", encoding="utf-8")
        canary, _ = run_tests(copy, pytest_args, timeout=limit)
        if canary == "pass":
            print(f"the tests pass with {rel} raising on import: they do not exercise it")
            return 2
        print(f"{rel}: {len(chosen)} mutants, the tests take {base_s:.1f} s unmutated", flush=True)
        lines_of = statement_lines(source)
        rest = without_paths(copy, pytest_args)
        survivors, unreached, start = [], set(), time.monotonic()
        try:
            for i, m in enumerate(chosen, 1):
                tests = selected_tests(m, lines_of, reached) if reached is not None else None
                if tests == []:
                    survivors.append(m)
                    unreached.add(m)
                    print(f"  {i}/{len(chosen)} {rel}:{m.line}: {m.change}: no test reaches it")
                    continue
                target.write_text(apply(source, m), encoding="utf-8")
                args = pytest_args if tests is None else [*rest, *tests]
                outcome, took = run_tests(copy, args, timeout=limit)
                if outcome == "pass":
                    survivors.append(m)
                ran = "all tests" if tests is None else f"{len(tests)} tests"
                verdict = "survived" if outcome == "pass" else f"killed ({outcome})"
                print(f"  {i}/{len(chosen)} {rel}:{m.line}: {m.change}: {verdict}, {ran}, "
                      f"{took:.0f} s", flush=True)  # fmt: skip
        finally:
            target.write_text(source, encoding="utf-8")
    lines = source.splitlines()
    killed = len(chosen) - len(survivors)
    pct = 100 * killed / len(chosen) if chosen else 100.0
    took = time.monotonic() - start
    print(f"score {rel}: {killed}/{len(chosen)} killed ({pct:.0f}%) in {took:.0f} s")
    unexplained = [m for m in survivors if key(rel, m, lines) not in explained]
    for m in survivors:
        tag = "UNEXPLAINED" if m in unexplained else "explained"
        tag += ", no test reaches it" if m in unreached else ""
        print(f"  survived {rel}:{m.line}: {m.change} ({tag})    | {lines[m.line - 1].strip()}")
    if full:
        alive = {key(rel, m, lines) for m in survivors}
        for k in explained:
            if k[0] == rel.as_posix() and k not in alive:
                print(f"  listed in {SURVIVORS.name} but did not survive: {k[1]}    | {k[2]}")
    if unexplained:
        print(
            f"{len(unexplained)} unexplained survivor(s): kill each with a test, or say in "
            f"{SURVIVORS.relative_to(ROOT)} why it is equivalent"
        )
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1 :]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="a .py file of the repository, e.g. specdec_lib/core/verify.py")
    p.add_argument("--sample", type=int, help="run a random sample of this many mutants")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--list", action="store_true", help="print the mutants and run nothing")
    p.add_argument(
        "--all-tests",
        action="store_true",
        help="run every test against every mutant (no trace of which tests reach which line)",
    )
    args = p.parse_args(argv)
    module = (ROOT / args.module).resolve()
    if not module.is_file() or module.suffix != ".py" or ROOT not in module.parents:
        print(f"not a Python file of this repository: {args.module}", file=sys.stderr)
        return 2
    source = module.read_text(encoding="utf-8")
    every = mutants(source)
    chosen = every
    if args.sample is not None and args.sample < len(every):
        chosen = sorted(random.Random(args.seed).sample(every, args.sample), key=every.index)
    if args.list:
        for m in chosen:
            print(f"{module.relative_to(ROOT)}:{m.line}: {m.change}")
        return 0
    if not pytest_args:
        print("give the tests to run after --, e.g. -- tests/test_rules.py -x -q", file=sys.stderr)
        return 2
    explained = read_survivors(SURVIVORS.read_text(encoding="utf-8")) if SURVIVORS.is_file() else {}
    return check(
        module, pytest_args, chosen, source, explained, chosen == every, not args.all_tests
    )


if __name__ == "__main__":
    sys.exit(main())
