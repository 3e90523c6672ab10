"""Generate the experiment notebooks (notebooks/NN_name.ipynb) so that they stay thin and alike.

    python notebooks/make_notebooks.py          # rewrite them all
    python notebooks/make_notebooks.py --check  # exit 1 if a notebook differs from this script

Every notebook: a Colab badge, a Colab-only setup cell (clone, read HF_TOKEN and WANDB_API_KEY
from Colab's secrets without printing them, install what a run needs without replacing Colab's
torch: `specdec_lib/environment/colab.py`), one cell tagged `parameters` with typed literals
only (papermill; `profile = "auto"` is resolved by `study.setup`), a cell that derives the
run from the profile, then calls into `specdec_lib.study`, which writes the result files
(see results/SCHEMA.md).
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

NOTEBOOKS = {
    "01_baseline": (
        "Autoregressive baseline",
        "The KV-cached autoregressive baseline: one target call per token. Tokens per second "
        "and seconds per prompt, medians with bootstrap 95% confidence intervals across prompts. "
        "Writes `baseline/`.",
        [("study.run_baseline(S)", "baseline")],
    ),
    "02_bigram": (
        "Bigram drafter",
        "A bigram table fitted on the fit split of WikiText-2 drafts K tokens; the target "
        "verifies them greedily. Paired with the baseline on the same prompts, interleaved per "
        "prompt. Writes `bigram/`.",
        [("study.run_bigram(S)", "bigram")],
    ),
    "03_transformer_draft": (
        "Transformer draft",
        "A transformer drafts: the target's own first layers (`self`, embedded profile) or "
        "gemma-3-1b-pt for gemma-3-4b-pt (colab-t4). Paired with the baseline; plus greedy "
        "token identity per dtype (the profile's and float32). Writes `transformer_draft/`.",
        [("study.run_transformer_draft(S)", "transformer_draft")],
    ),
    "04_context_sweep": (
        "Context sweep",
        "Speedup and acceptance as the visible context grows, on the same documents and "
        "anchors at every context, each context with its own paired baseline; the earlier "
        "study's way of computing speedup (one context-20 baseline for every row) beside it; "
        "the same sweep with the KV cache off on the very same prompts; and the timing-free "
        "teacher-forced agreement of every draft with the target on the documents' real next "
        "tokens, at the same positions for every context. Writes `context_sweep/`, "
        "`context_sweep_nocache/` and `agreement/`.",
        [
            ("study.run_context_sweep(S, use_cache=True)", "context_sweep"),
            ("study.run_context_sweep(S, use_cache=False)", "context_sweep_nocache"),
            ("study.run_agreement(S)", "agreement"),
        ],
    ),
    "05_k_sweep": (
        "Draft length K",
        "The transformer draft at each K of the profile (`ks`): measured speedup beside "
        "Leviathan et al.'s prediction from the measured acceptance and cost ratio, and an "
        "adaptive-K schedule (longer after a fully accepted draft, shorter after an early "
        "rejection). Writes `k_sweep/`.",
        [("study.run_k_sweep(S)", "k_sweep")],
    ),
    "06_sampling": (
        "Speculative sampling",
        "Temperatures 0.7 and 1.0 with lossless speculative sampling: acceptance and speedup, "
        "and an empirical check that the first sampled token follows the target's exact "
        "distribution (total variation distance and a chi-square test over many seeds, beside "
        "the same for plain sampling). Writes `sampling/`.",
        [("study.run_sampling(S)", "sampling")],
    ),
    "07_peers": (
        "Hugging Face peers",
        "Hugging Face `generate`: greedy, prompt lookup (`prompt_lookup_num_tokens`) and "
        "assisted generation (`assistant_model`) on the same prompts and the same pair, beside "
        "our baseline, n-gram lookup and transformer draft: speed, and the fraction of outputs "
        "identical to greedy. Writes `peers/`.",
        [("study.run_peers(S)", "peers")],
    ),
}


def badge(name: str) -> str:
    url = REPO_URL.replace("https://github.com/", "https://colab.research.google.com/github/")
    return (
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({url}/blob/{BRANCH}/notebooks/{name}.ipynb)"
    )


def build(name: str) -> nbformat.NotebookNode:
    title, text, calls = NOTEBOOKS[name]
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
    for call, experiment in calls:
        cells.append(new_code_cell(f'result = {call}\nstudy.display_result(S, "{experiment}")'))
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
    writes = {name: tuple(e for _, e in NOTEBOOKS[name][2]) for name in NOTEBOOKS}
    if writes != catalog.NOTEBOOKS:  # the catalog is the one list; the cells must agree with it
        print(f"notebook cells disagree with specdec_lib/results/catalog.py: {writes}")
        return 1
    check = "--check" in argv
    stale = []
    for name in NOTEBOOKS:
        text = nbformat.writes(build(name)) + "\n"
        path = HERE / f"{name}.ipynb"
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
