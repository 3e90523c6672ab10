"""A small mutation check (stdlib only): does a test selection notice when a module's code changes?

Each mutant changes one thing in one module, found with `ast`:
- a comparison operator: < <-> <=, > <-> >=, == <-> != (one mutant per operator),
- an arithmetic operator (also in `x op= y`): + <-> -, * <-> /,
- an integer constant: n -> n + 1 (booleans are left alone).
The mutant module is written with `ast.unparse` into a temporary copy of the repository (never
into the working tree), and the given pytest arguments run there. A mutant is killed when pytest
fails (or runs past its time limit); it survives when the tests pass. Prints the score and every
survivor as path:line, the change and the original line.

Before the mutants, two runs check the set-up: the unmutated copy must pass, and a copy whose
module raises on import must fail (so the tests really import the copied module).

    python tests/mutation.py specdec_lib/analysis/rules.py -- tests/test_rules.py -x -q
    python tests/mutation.py MODULE --sample 10 --seed 0 -- PYTEST_ARGS...   # a random 10
    python tests/mutation.py MODULE --list                                   # mutants only

Knows nothing about the project beyond where its repository root is (this file's parent's parent).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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


def run_tests(copy: Path, pytest_args: list[str], timeout: float) -> tuple[str, float]:
    """pytest in the copy: "pass", "fail" or "timeout", and the seconds it took."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no stale bytecode between mutants
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


def check(module: Path, pytest_args: list[str], chosen: list[Mutant], source: str) -> int:
    """Run every chosen mutant; print the score and the survivors. Returns the exit status."""
    rel = module.relative_to(ROOT)
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=IGNORE)
        target = copy / rel
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
        print(f"{rel}: {len(chosen)} mutants, the tests take {base_s:.1f} s unmutated")
        survivors, start = [], time.monotonic()
        try:
            for m in chosen:
                target.write_text(apply(source, m), encoding="utf-8")
                outcome, _ = run_tests(copy, pytest_args, timeout=limit)
                if outcome == "pass":
                    survivors.append(m)
        finally:
            target.write_text(source, encoding="utf-8")
    lines = source.splitlines()
    killed = len(chosen) - len(survivors)
    pct = 100 * killed / len(chosen) if chosen else 100.0
    took = time.monotonic() - start
    print(f"score {rel}: {killed}/{len(chosen)} killed ({pct:.0f}%) in {took:.0f} s")
    for m in survivors:
        print(f"  survived {rel}:{m.line}: {m.change}    | {lines[m.line - 1].strip()}")
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
    return check(module, pytest_args, chosen, source)


if __name__ == "__main__":
    sys.exit(main())
