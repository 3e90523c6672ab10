"""Generate the experiment notebooks (notebooks/NN_name.ipynb) so that they stay thin and alike.

    python notebooks/make_notebooks.py          # rewrite them all
    python notebooks/make_notebooks.py --check  # exit 1 if a notebook differs from this script

Every notebook: a Colab badge, a Colab-only setup cell (clone, read HF_TOKEN and WANDB_API_KEY
from Colab's secrets without printing them, install what a run needs without replacing Colab's
torch: `specdec_lib/environment/colab.py`), one cell tagged `parameters` with typed literals
only (papermill; `profile = "auto"` is resolved by `study.setup`), a cell that derives the
run from the profile, then one cell per experiment calling into `specdec_lib.study`, which
writes the result files (see results/SCHEMA.md). Titles, texts and calls are the declarations'
(`specdec_lib/results/catalog.py` and each experiment's analysis module).
The notebooks are committed without outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from specdec_lib.results import catalog  # noqa: E402
from specdec_lib.results.declare import load  # noqa: E402

CONFIG = HERE.parent / "_config.yml"


def repository() -> tuple[str, str]:
    """(URL, branch) of the repository: `repository.url` / `repository.branch` in _config.yml, the
    one setting the book's repository button, the Colab badges and the Colab clone all read."""
    repo = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["repository"]
    return str(repo["url"]).rstrip("/"), str(repo.get("branch", "main"))


REPO_URL, BRANCH = repository()

COLAB_SETUP = f"""\
# Colab only (elsewhere this cell does nothing): clone the repository, copy HF_TOKEN and
# WANDB_API_KEY from Colab's secrets into the environment (never printed), then install what a
# notebook needs to run, keeping Colab's own torch (specdec_lib/environment/colab.py). It says when
# the runtime must be restarted. Results can go to Google Drive: mount it and set `results_dir`.
import os
import subprocess
import sys

if "google.colab" in sys.modules:
    home = os.environ.get("SPECDEC_HOME", "/content/specdec")
    if not os.path.isdir(os.path.join(home, "specdec_lib")):
        repo, branch = "{REPO_URL}", "{BRANCH}"
        subprocess.run(["git", "clone", "--depth", "1", "-b", branch, repo, home], check=True)
    os.chdir(home)
    sys.path.insert(0, home)
    from specdec_lib.environment import colab

    colab.read_secrets()
    colab.install(colab.target_of(colab.auto_profile()))
"""

PARAMETERS = """\
profile: str = "auto"  # auto: colab-t4 on a Colab GPU, else embedded; or smoke | smoke-pair
results_dir: str = "results"  # <results_dir>/<profile>/<experiment>/; e.g. a mounted Drive folder
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

from specdec_lib import study  # noqa: E402

S = study.setup(
    profile,
    results_dir=results_dir,
    force=force,
    overrides={"n_prompts": n_prompts, "max_new_tokens": max_new_tokens},
    dtype=dtype,
)
print(
    f"profile {S.name}: target {S.profile['target']}, dtype {S.profile.get('dtype')}, "
    f"results in {study.rel(S.store.dir(''))}"
)
"""


def badge(name: str) -> str:
    url = REPO_URL.replace("https://github.com/", "https://colab.research.google.com/github/")
    return (
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({url}/blob/{BRANCH}/notebooks/{name}.ipynb)"
    )


def build(notebook: catalog.Notebook) -> nbformat.NotebookNode:
    """The notebook a declaration describes: its text, setup, parameters and one cell per
    experiment (the experiment's declared call, then its reading)."""
    name, title, text = notebook.name, notebook.title, notebook.text
    number = name.split("_", 1)[0]
    cells = [
        new_markdown_cell(
            f"{badge(name)}\n\n# {number}. {title}\n\n{text}\n\n"
            "Run it as is (profile `auto`: `embedded` on a CPU, `colab-t4` on a Colab GPU "
            "runtime), or with papermill "
            f"(`papermill notebooks/{name}.ipynb out.ipynb -p profile smoke`). In Colab set "
            "`HF_TOKEN` (and optionally `WANDB_API_KEY`) in Colab's secrets for the gated Gemma "
            "weights. Results already computed for the same config are reused "
            "unless `force` is set; every file is described in `results/SCHEMA.md`."
        ),
        new_code_cell(COLAB_SETUP.rstrip("\n")),
        new_code_cell(PARAMETERS.rstrip("\n"), metadata={"tags": ["parameters"]}),
        new_code_cell(DERIVE.rstrip("\n")),
    ]
    for ref in notebook.experiments:
        e = load(ref)
        cells.append(new_code_cell(f'result = {e.call}\nstudy.display_result(S, "{e.name}")'))
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
    for notebook in catalog.STUDY:
        text = nbformat.writes(build(notebook)) + "\n"
        path = HERE / f"{notebook.name}.ipynb"
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date (run python notebooks/make_notebooks.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
