"""Generate the experiment notebooks (notebooks/NN_name.ipynb) so that they stay thin and alike.

    python notebooks/make_notebooks.py          # rewrite them all (and SCHEMA.md's generated parts)
    python notebooks/make_notebooks.py --check  # exit 1 if a notebook or SCHEMA.md differs

Every notebook: a Colab badge, a Colab-only setup cell (clone the commit
the notebooks were generated from, read HF_TOKEN and WANDB_API_KEY
from Colab's secrets without printing them, install what a run needs without replacing Colab's
torch: `specdec_study/environment/colab.py`), one cell tagged `parameters` with typed literals
only (papermill; `profile = "auto"` is resolved by `study.setup`), a cell that derives the
run from the profile and prints its estimated time (`study.print_estimate`), then one cell per
experiment calling into `specdec_study.study`, which writes the result files (see
results/SCHEMA.md). Titles, texts and calls are the declarations' (each experiment's module in
`specdec_study/experiments`, found by `specdec_study/results/catalog.py`).
The notebooks are committed without outputs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from specdec_lib.errors import SpecdecError  # noqa: E402
from specdec_study.results import catalog, schema_page  # noqa: E402

CONFIG = HERE.parent / "_config.yml"
SCHEMA = HERE.parent / "results" / "SCHEMA.md"


def repository() -> tuple[str, str]:
    """(URL, branch) of the repository: `repository.url` / `repository.branch` in _config.yml, the
    one setting the book's repository button, the Colab badges and the Colab clone all read."""
    repo = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["repository"]
    return str(repo["url"]).rstrip("/"), str(repo.get("branch", "main"))


REPO_URL, BRANCH = repository()


def generated_from() -> str:
    """The commit the notebooks are generated from (`git rev-parse HEAD`), which their Colab
    clone checks out; the branch where there is no git. Generate after committing the code."""
    import subprocess

    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=HERE.parent, capture_output=True, text=True
    )
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", sha) else BRANCH


# the recorded commit, in a cell's source or in the notebook's JSON (quotes escaped)
COMMIT_RE = re.compile(r'SPECDEC_COMMIT = \\?"([\w./-]+)\\?"')
# what a Colab run executes from its clone: a change here after the recorded commit needs the
# notebooks regenerated (and committed) so that the clone runs it
WATCHED = ("specdec_lib", "specdec_study", "profiles", "requirements-colab.txt")


def changed_since(commit: str, root: Path = HERE.parent) -> list[str]:
    """The files of `WATCHED` that differ between `commit` and HEAD (`git diff --name-only`);
    LookupError saying why when that cannot be told (no git, or the commit is not in this
    history, e.g. a shallow clone)."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        except OSError as e:
            raise LookupError(f"git cannot run ({type(e).__name__})") from None

    if git("rev-parse", "--git-dir").returncode:
        raise LookupError(f"{root} is not a git checkout")
    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode:
        raise LookupError(f"commit {commit} is not in this history (a shallow clone?)")
    done = git("diff", "--name-only", commit, "HEAD", "--", *WATCHED)
    if done.returncode:
        raise LookupError(f"git diff failed: {done.stderr.strip()[:200]}")
    return done.stdout.split()


def colab_setup(commit: str, quick: bool = False) -> str:
    """The setup cell (after the parameters, which it reads): in Colab, clone the repository at
    `commit` (or update a clone to it), then `colab.prepare`: everything that can stop a run is
    checked before any download, Drive is mounted, and only what Colab lacks is installed."""
    return f"""\
# Colab only (elsewhere this cell does nothing): clone the repository at the commit these
# notebooks were generated from (or update an existing clone to it), then, before any download:
# copy HF_TOKEN and WANDB_API_KEY from Colab's secrets (never printed), stop if "auto" finds no
# GPU, check the token's access to every gated model the profile loads, mount Drive for the
# results, and install only what Colab lacks, keeping its torch, numpy and pandas
# (specdec_study/environment/colab.py). It stops "Run all" when the runtime must be restarted.
import os
import subprocess
import sys

SPECDEC_COMMIT = "{commit}"

if "google.colab" in sys.modules:
    home = os.environ.get("SPECDEC_HOME", "/content/specdec")
    repo = "{REPO_URL}"

    def git(*args):
        done = subprocess.run(["git", *args], capture_output=True, text=True)
        if done.returncode:
            why = ((done.stderr or "").strip().splitlines() or ["no message"])[-1]
            raise SystemExit(
                f"git {{args[0] if args[0] != '-C' else args[2]}} failed for {{repo}} at "
                f"{{SPECDEC_COMMIT}}: {{why}} (is the `repository.url` setting in _config.yml "
                "right, and the commit pushed? then run `make notebooks`)"
            )

    if not os.path.exists(os.path.join(home, ".git")):
        git("clone", "--filter=blob:none", "--no-checkout", repo, home)
    git("-C", home, "fetch", "--filter=blob:none", "origin", SPECDEC_COMMIT)
    git("-C", home, "checkout", "--detach", "FETCH_HEAD")
    os.chdir(home)
    sys.path.insert(0, home)
    from specdec_study.environment import colab

    colab.prepare(profile, results_dir, quick={quick})
"""


PARAMETERS = """\
profile: str = "auto"  # auto: colab-t4 on a Colab GPU, embedded off Colab; or a name
results_dir: str = "auto"  # <results_dir>/<profile>/<experiment>/; auto: Drive in Colab
force: bool = False  # recompute even if results for this config exist (env FORCE 1 does too)
n_prompts: int = 0  # 0: the profile's prompt count
max_new_tokens: int = 0  # 0: the profile's
dtype: str = ""  # "": the profile's (auto: by device); float32 | bfloat16 | float16
"""

DERIVE = """\
import sys
import warnings
from pathlib import Path

# without ipywidgets tqdm draws text progress bars, which is what an executed notebook should keep
warnings.filterwarnings("ignore", message="IProgress not found")

root = Path.cwd().resolve()
while not (root / "specdec_lib").is_dir() and root != root.parent:
    root = root.parent
sys.path.insert(0, str(root))

from specdec_study import study  # noqa: E402

study_run = study.setup(
    profile,
    quick=QUICK,
    results_dir=results_dir,
    force=force,
    overrides={"n_prompts": n_prompts, "max_new_tokens": max_new_tokens},
    dtype=dtype,
)
print(
    f"profile {study_run.name}: target {study_run.profile['target']}, "
    f"dtype {study_run.profile.get('dtype')}, results in {study.rel(study_run.store.dir(''))}"
)
# before anything runs: the minutes each experiment will take, from its counts and a few target
# calls timed here (runner/estimate.py); nothing is measured when every result is stored
study.print_estimate(study_run, EXPERIMENT_NAMES)
"""


# the quick notebook's own profile: "auto" is colab-t4-quick on a Colab GPU, else smoke-pair
QUICK_PARAMETERS = PARAMETERS.replace(
    "# auto: colab-t4 on a Colab GPU, embedded off Colab; or a name",
    f"# auto: {catalog.QUICK_PROFILE} on a Colab GPU, smoke-pair off Colab; or a name",
)

BUNDLE = """\
# Colab only: zip this profile's results (beside them, on Drive by default) for the way back into
# the book: `python -m specdec_lib import-bundle PATH.zip` on your machine (README, "Colab results")
if "google.colab" in sys.modules:
    study.write_bundle(study_run)"""


def badge(name: str) -> str:
    url = REPO_URL.replace("https://github.com/", "https://colab.research.google.com/github/")
    return (
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({url}/blob/{BRANCH}/notebooks/{name}.ipynb)"
    )


def names_literal(notebook: catalog.Notebook) -> str:
    """The notebook's experiment names as a tuple literal, as ruff formats it."""
    names = [f'"{e.name}"' for e in notebook.experiments]
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


ESTIMATE = "study.print_estimate(study_run, EXPERIMENT_NAMES)"


def estimate_call(notebook: catalog.Notebook, width: int = 100) -> str:
    """The estimate's call with the notebook's names, its arguments on their own line where the
    call would pass `width` (as ruff formats it)."""
    call = ESTIMATE.replace("EXPERIMENT_NAMES", names_literal(notebook))
    if len(call) <= width:
        return call
    return f"study.print_estimate(\n    study_run, {names_literal(notebook)}\n)"


def build(notebook: catalog.Notebook, commit: str = "") -> nbformat.NotebookNode:
    """The notebook a declaration describes: its text, setup, parameters and one cell per
    experiment (the experiment's declared call, then its reading)."""
    name, title, text = notebook.name, notebook.title, notebook.text
    quick = notebook is catalog.QUICK
    number = name.split("_", 1)[0]
    cells = [
        new_markdown_cell(
            f"{badge(name)}\n\n# {number}. {title}\n\n{text}\n\n"
            "Run it as is (profile `auto`: "
            + (
                f"`{catalog.QUICK_PROFILE}` on a Colab GPU runtime, `smoke-pair` outside Colab"
                if quick
                else "`colab-t4` on a Colab GPU runtime, `embedded` outside Colab"
            )
            + "; a Colab runtime without a GPU stops and says how to get a T4, unless `profile` "
            "names one; in Colab results go to a Drive folder, or the last cell offers them for "
            "download), or with papermill "
            f"(`papermill notebooks/{name}.ipynb out.ipynb -p profile smoke`). In Colab set "
            "`HF_TOKEN` (and optionally `WANDB_API_KEY`) in Colab's secrets for the gated Gemma "
            "weights. Results already computed for the same config are reused "
            "unless `force` is set; every file is described in `results/SCHEMA.md`."
        ),
        new_code_cell(
            (QUICK_PARAMETERS if quick else PARAMETERS).rstrip("\n"),
            metadata={"tags": ["parameters"]},
        ),
        new_code_cell(colab_setup(commit or generated_from(), quick).rstrip("\n")),
        new_code_cell(
            DERIVE.replace("quick=QUICK", f"quick={quick}")
            .replace(ESTIMATE, estimate_call(notebook))
            .rstrip("\n")
        ),
    ]
    for e in notebook.experiments:
        cells.append(
            new_code_cell(f'result = {e.call}\nstudy.display_result(study_run, "{e.name}")')
        )
    cells.append(new_code_cell(BUNDLE))
    nb = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating gives identical files
        cell["id"] = f"{name}-{i}"
    return nb


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    commit = generated_from()
    for notebook in (catalog.QUICK, *catalog.STUDY):
        path = HERE / f"{notebook.name}.ipynb"
        recorded = path.is_file() and COMMIT_RE.search(path.read_text(encoding="utf-8"))
        # --check compares everything but the recorded commit, which moves with every commit
        text = nbformat.writes(build(notebook, recorded.group(1) if check and recorded else commit))
        text += "\n"
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    # results/SCHEMA.md's notebook table and per-experiment sections, from the same declarations
    page = SCHEMA.read_text(encoding="utf-8")
    try:
        made = schema_page.fill(page, catalog.STUDY)
    except SpecdecError as e:
        print(e)
        return 2
    if check and made != page:
        stale.append("results/SCHEMA.md")
    elif not check and made != page:
        SCHEMA.write_text(made, encoding="utf-8")
    if stale:
        print(f"out of date (run python notebooks/make_notebooks.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
