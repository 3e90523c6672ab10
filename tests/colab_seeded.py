"""`make colab-pip-check`: the Colab setup cell's install run for real by pip, in a virtual
environment seeded with Colab's published versions (tests/data/colab-freeze.txt) of the packages
that matter here: what Colab holds (`colab.KEEP`), what its kernel imports at start-up that pip
can install, the notebooks' runtime requirements and what the setup cell installs, each at
Colab's version, with their dependencies resolved under the freeze list as constraints. torch is
this project's own CPU build (`make setup`'s, found through pip's configured links) rather than
Colab's CUDA 2.11 (too large to fetch for a check; the setup cell never moves it either way);
google-colab itself is not on PyPI.

Then, in that environment, with numpy and pandas imported first (as Colab's kernel has them),
`colab.install(target)` runs pip: it fails (exit 1, one line each) on a changed package Colab
holds or imports at start-up, on anything changed that requirements-colab.txt does not name, on
a pip dependency conflict that names a package the project imports, on the cell's own restart
stop, and on an import error of the project (`specdec_study.study` and the Gemma 3 classes).

Needs the network and a few minutes (about 400 MB of wheels); not part of pytest. Python is this
machine's (Colab's is 3.13: wheels and markers of another Python may differ). Knows nothing about
models or experiments.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from specdec_study.environment import colab  # noqa: E402

FREEZE = ROOT / "tests" / "data" / "colab-freeze.txt"
# what Colab's kernel imports at start-up that pip can install here (google-colab cannot be)
STARTUP = ["ipykernel", "ipython", "tornado", "pyzmq", "traitlets", "requests", "psutil"]
# the project's imports (a conflict naming one of these fails the check)
PROJECT = {
    "torch", "transformers", "accelerate", "huggingface-hub", "tokenizers", "safetensors",
    "numpy", "scipy", "pandas", "pyyaml", "pydantic", "tqdm", "matplotlib", "seaborn", "wandb",
    "filelock",
}  # fmt: skip


def freeze() -> dict[str, str]:
    out = {}
    for line in FREEZE.read_text().splitlines():
        if line.startswith("#") or "==" not in line:
            continue
        name, _, version = line.partition("==")
        out[colab._name(name)] = version.strip()
    return out


def versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {colab._name(k): v for k, v in json.loads(done.stdout).items()}


def seed(python: Path, colab_versions: dict[str, str], work: Path) -> None:
    """Colab's versions of the packages that matter, dependencies under the freeze list."""
    names = sorted(
        colab.KEEP
        | set(colab.locked())
        | {colab._name(r) for r in colab.runtime_requirements("google/gemma-3-4b-pt")}
        | set(STARTUP)
    )
    pins = {n: colab_versions[n] for n in names if n in colab_versions}
    # this project's CPU torch, alone (it asks a newer setuptools than Colab's), then its
    # dependencies and everything else at Colab's versions
    torch = f"torch=={importlib.metadata.version('torch')}"
    pip = [str(python), "-m", "pip", "install", "-q"]
    env = {**os.environ, "PIP_CONSTRAINT": ""}  # pip's configured links find the CPU torch
    subprocess.run([*pip, "--no-deps", torch], check=True, env=env)
    del pins["torch"]
    constraints = work / "colab-constraints.txt"
    # setuptools left free: this torch asks >= 77, Colab has 75 (and imports none at start-up)
    free = {"torch", "setuptools"}
    lines = [f"{n}=={v}" for n, v in colab_versions.items() if "+" not in v and n not in free]
    constraints.write_text("\n".join([*lines, torch]) + "\n")
    torch_deps = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec"]
    cmd = [*pip, *[f"{n}=={v}" for n, v in pins.items()], *torch_deps]
    subprocess.run(cmd, check=True, env={**env, "PIP_CONSTRAINT": str(constraints)})


INSTALL = """
import sys
sys.path.insert(0, {root!r})
import numpy, pandas  # imported at start-up, as in Colab's kernel
from specdec_study.environment import colab
colab.install("google/gemma-3-4b-pt")
"""
IMPORTS = (
    "import sys; sys.path.insert(0, {root!r}); import specdec_study.study; "
    "from transformers import Gemma3ForCausalLM, Gemma3ForConditionalGeneration; "
    "print('imports ok')"
)


def conflicts(pip_output: str) -> list[str]:
    """pip's dependency-conflict lines that name a package the project imports."""
    found = []
    for line in pip_output.splitlines():
        match = re.match(r"(\S+) \S+ requires (\S+?)[<>=!~ ,;]", line)
        if match and colab._name(match[1]) == "torch":
            continue  # this project's torch, not Colab's (seed): its wants are not Colab's
        if match and {colab._name(match[1]), colab._name(match[2])} & PROJECT:
            found.append(line.strip())
    return found


def main(argv: list[str]) -> int:
    work = Path(argv[0] if argv else "/tmp/specdec-colab-seeded").resolve()
    work.mkdir(parents=True, exist_ok=True)
    env_dir = work / "venv"
    python = env_dir / "bin" / "python"
    colab_versions = freeze()
    if not python.exists():
        venv.create(env_dir, with_pip=True)
        seed(python, colab_versions, work)
    before = versions(python)
    done = subprocess.run(
        [str(python), "-c", INSTALL.format(root=str(ROOT))],
        capture_output=True, text=True, env={**os.environ, "PIP_CONSTRAINT": ""},
    )  # fmt: skip
    print(done.stdout[-6000:], done.stderr[-3000:], sep="\n")
    after = versions(python)
    changed = {n: (before.get(n), after.get(n)) for n in before.keys() | after.keys()}
    changed = {n: v for n, v in changed.items() if v[0] != v[1]}
    problems = []
    if done.returncode:
        problems.append(f"the setup cell's install stopped (exit {done.returncode})")
    held = (colab.KEEP | set(STARTUP)) & set(changed)
    problems += [f"{n} moved {changed[n][0]} -> {changed[n][1]} (Colab's own)" for n in held]
    unnamed = {n for n, (b, _) in changed.items() if b is not None} - set(colab.locked()) - held
    problems += [f"{n} moved {changed[n][0]} -> {changed[n][1]} (not in the lock)" for n in unnamed]
    problems += [f"pip conflict: {c}" for c in conflicts(done.stdout + done.stderr)]
    imports = subprocess.run(
        [str(python), "-c", IMPORTS.format(root=str(ROOT))], capture_output=True, text=True
    )
    if imports.returncode:
        why = (imports.stderr.strip().splitlines() or ["no message"])[-1]
        problems.append(f"the project does not import: {why}")
    print(f"changed: {json.dumps(dict(sorted(changed.items())))}")
    for problem in problems:
        print(f"FAIL {problem}")
    print("colab-pip-check: " + ("failed" if problems else "passed"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
