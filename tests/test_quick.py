"""The quick path (notebook 00_quick, profile colab-t4-quick) on CPU with the smoke pair: the
notebook runs end to end; its agreement pass, killed half-way, resumes without recomputing the
finished (document, context) pairs and publishes the rows an uninterrupted run gives; its results
go into a bundle that `python -m specdec_lib import-bundle` checks and unpacks, and a damaged,
mixed or secret-holding bundle is refused in one line with nothing written. Then all of it in
one chain (issue 24's done-when, slow): the notebook as is under a stand-in Colab with Drive,
killed (SIGKILL) half-way, resumed in a fresh runtime, its own bundle imported by the command and
shown by the built book."""

from __future__ import annotations

import html
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from specdec_lib.config import config_hash
from specdec_study import cli, study
from specdec_study import pages as R
from specdec_study.analysis import rules
from specdec_study.environment.profiles import load_profile
from specdec_study.environment.secrets import STORED_SECRETS
from specdec_study.experiments import agreement as agreement_module
from specdec_study.reporting.format import md_cell
from specdec_study.results import bundle, catalog
from specdec_study.runner import t4
from specdec_study.runner.experiments import RUNNERS

pytestmark = pytest.mark.usefixtures("single_thread")
ROOT = Path(__file__).resolve().parents[1]


class Killed(Exception):
    pass


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")


def test_the_quick_notebook_runs_end_to_end_on_the_smoke_pair(tmp_path, quiet):
    pm = pytest.importorskip("papermill")
    pm.execute_notebook(
        str(ROOT / "notebooks" / "00_quick.ipynb"),
        str(tmp_path / "00_quick.ipynb"),
        parameters={"results_dir": str(tmp_path)},  # profile auto: smoke-pair off Colab
        kernel_name="python3",
        cwd=str(ROOT),
        progress_bar=False,
    )
    for e in QUICK_EXPERIMENTS:
        summary = json.loads((tmp_path / "smoke-pair" / e / "summary.json").read_text())
        assert summary["profile"] == "smoke-pair"
    assert not (tmp_path / "smoke-pair" / "implementations").exists()  # the paradox's runs only


QUICK_EXPERIMENTS = ("agreement", "context_sweep", "context_sweep_nocache")


def test_the_quick_profile_runs_what_decides_h1_to_h4(tmp_path):
    prof = load_profile(catalog.QUICK_PROFILE)
    assert set(prof["experiments"]) == set(QUICK_EXPERIMENTS)
    assert {e.name for e in catalog.QUICK.experiments} == set(prof["experiments"])
    S = study.setup(catalog.QUICK_PROFILE, results_dir=str(tmp_path))
    ag, sw = RUNNERS["agreement"].config(S), RUNNERS["context_sweep"].config(S)
    off = RUNNERS["context_sweep_nocache"].config(S)
    assert ag["contexts"] == ag["test_range"] == [10, 100]  # H3
    assert set(ag["test_range"]) <= set(sw["contexts"]) and sw["primary"] == ag["primary"]  # H4
    assert sw["reference_context"] in sw["contexts"] == off["contexts"]  # H2: the divisor's
    assert list(off["arms"]) == ["baseline"] and off["use_cache"] is False  # H1
    assert ag["primary"] == "gemma-3-1b-pt"


def embedded_finding(key: str):
    from specdec_study.analysis.verdicts import findings
    from specdec_study.reporting.earlier import earlier_recomputed
    from specdec_study.results.read import load_results

    found = {f.key: f for f in findings(load_results("embedded"), earlier_recomputed())}
    if found[key].label == rules.NOT_TESTED:
        pytest.skip(f"no committed embedded result decides {key}")
    return found[key]


@pytest.mark.parametrize("key, c0", [("H1", 10), ("H2", 20)])
def test_the_quick_cache_off_prompts_decide_h1_and_h2_at_the_stated_t4_costs(key, c0):
    """The profile's comment, recomputed: the committed design's detectable distance at its n,
    scaled to the quick profile's cache-off prompts, is well inside the distance the T4's
    stated costs put between the expected growth and the rule's 1.10."""
    f = embedded_finding(key)
    power = rules.power(rules.Quantity.of(f.q), 1.10)
    prof = load_profile(catalog.QUICK_PROFILE)["experiments"]
    n_off, new = prof["context_sweep_nocache"]["n_prompts"], prof["context_sweep"]["max_new_tokens"]
    detectable = power.detectable * math.sqrt(power.n / n_off)
    expected = t4.nocache_growth(c0, 100, new)  # H1: over a cache-on growth of 1
    threshold = rules.H1_EXTRA_GROWTH if key == "H1" else rules.H2_BASELINE_GROWTH
    assert expected - threshold > 5 * detectable


def test_the_quick_profile_states_the_minutes_its_estimator_gives():
    """The profile's comment says the estimate `python -m specdec_study.runner.t4` prints: its
    stated step time and its total minutes, which lie within the 20-minute budget."""
    from specdec_study.runner.estimate import _span
    from specdec_study.runner.real_shapes import TARGET

    header = " ".join(
        line.lstrip("# ").strip()
        for line in (ROOT / "profiles" / f"{catalog.QUICK_PROFILE}.yaml").read_text().splitlines()
        if line.startswith("#")
    )
    _, (lo, hi) = t4.t4_estimate(catalog.QUICK_PROFILE)
    assert f"estimate {_span(lo, hi)} minutes" in header and hi <= t4.BUDGET_MINUTES
    assert f"a 4B step {1000 * t4.call_seconds(TARGET, 1):.1f} ms" in header
    assert f"below the {t4.ridge_rows()} rows" in header


def test_the_quick_counts_detect_the_published_fall_by_the_committed_power():
    """The profile's comment, recomputed: the widest separate draft's detectable distance at the
    embedded profile's n, scaled to the quick counts, is within the published distance."""
    from specdec_study.analysis.verdicts import ladder
    from specdec_study.results.read import load_results

    res = load_results("embedded").get("agreement")
    if res is None:
        pytest.skip("no committed embedded agreement")
    distance = rules.MATERIAL_RATIO - rules.published_ratio()
    separate = [r for r in ladder(res) if r["kind"] == "a separate computation"]
    widest = max(r["power"].detectable for r in separate if math.isfinite(r["power"].detectable))
    n_quick = load_profile(catalog.QUICK_PROFILE)["experiments"]["agreement"]["n_documents"]
    assert widest * math.sqrt(separate[0]["power"].n / n_quick) <= distance + 1e-3


def counting(monkeypatch, kill_at: int | None = None) -> list[tuple[int, int]]:
    """Record (document, context) of every teacher-forced view; raise Killed on call kill_at."""
    calls: list[tuple[int, int]] = []
    real = agreement_module._rows_at

    def rows_at(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view):
        calls.append((doc, context))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return real(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view)

    monkeypatch.setattr(agreement_module, "_rows_at", rows_at)
    return calls


def test_a_killed_agreement_pass_resumes_without_recomputing(tmp_path, monkeypatch, quiet):
    S = study.setup("smoke-pair", results_dir=str(tmp_path / "killed"))
    calls = counting(monkeypatch, kill_at=5)  # two views per pair: dies in the third pair
    with pytest.raises(Killed):
        study.run(S, "agreement")
    assert not (tmp_path / "killed" / "smoke-pair" / "agreement").exists()
    finished = calls[:4]
    monkeypatch.undo()
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    study.run(S, "agreement")
    assert calls and not set(finished) & set(calls)  # the finished pairs were not recomputed
    assert not list((tmp_path / "killed" / "smoke-pair").glob(".agreement.partial-*"))

    whole = study.setup("smoke-pair", results_dir=str(tmp_path / "whole"))
    study.run(whole, "agreement")
    rows = [(tmp_path / d / "smoke-pair/agreement/per_prompt.csv").read_text() for d in
            ("killed", "whole")]  # fmt: skip
    assert rows[0] == rows[1]


@pytest.fixture(scope="module")
def smoke_pair_results(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.delenv("FORCE", raising=False)
    mp.setenv("WANDB_MODE", "disabled")
    root = tmp_path_factory.mktemp("quick")
    S = study.setup("smoke-pair", results_dir=str(root))
    study.run(S, "agreement")
    study.run(S, "context_sweep")
    mp.undo()
    return S


def test_a_bundle_of_a_smoke_run_imports_into_the_results(smoke_pair_results, tmp_path, capsys):
    S = smoke_pair_results
    (S.store.dir("") / "wandb").mkdir(exist_ok=True)  # never bundled
    zipped = study.write_bundle(S)
    names = zipfile.ZipFile(zipped).namelist()
    assert names and all(n.startswith("smoke-pair/") and "wandb" not in n for n in names)
    dest = tmp_path / "results"
    env = {"SPECDEC_RESULTS": str(dest)}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert cli.main(["import-bundle", str(zipped), "--profile", "smoke-pair"]) == 0
        for e in ("agreement", "context_sweep"):
            assert (dest / "smoke-pair" / e / "summary.json").is_file()
        # a second import would overwrite: refused unless --replace
        assert cli.main(["import-bundle", str(zipped)]) == 2
        assert "--replace" in capsys.readouterr().err
        assert cli.main(["import-bundle", str(zipped), "--replace"]) == 0


def rezip(src: Path, out: Path, change) -> Path:
    """A copy of bundle src with change(name, data) -> (name, data) | None applied per member."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(out, "w") as w:
        for n in z.namelist():
            got = change(n, z.read(n))
            if got is not None:
                w.writestr(*got)
    return out


def edit(name: str, data: bytes, where: str, file: str, rehash: bool = True, **values):
    """The member with `values` set in <where>/<file> (config.json's hash recomputed unless
    rehash is False: an edited config that still claims its old hash)."""
    if not name.endswith(f"/{where}/{file}"):
        return name, data
    d = {**json.loads(data), **values}
    if file == "config.json" and rehash:
        d["config_hash"] = config_hash({k: v for k, v in d.items() if k != "config_hash"})
    return name, json.dumps(d).encode()


def profile_of(name: str, data: bytes, to: str) -> tuple[str, bytes]:
    return edit(name, data, "agreement", "config.json", profile=to)


def as_profile(name: str, data: bytes, to: str) -> tuple[str, bytes]:
    """The member of a bundle renamed to profile `to`: its folder, and every config and summary
    naming it (hashes recomputed), as a bundle measured under that profile would be."""
    name = name.replace("smoke-pair/", f"{to}/", 1)
    exp = name.split("/")[1]
    name, data = edit(name, data, exp, "summary.json", profile=to)
    prof = load_profile(to)  # the import checks the profile's target and model: drafts
    if name.endswith("/config.json"):
        data = data.replace(b"model:tiny-random-draft", prof["drafts"]["transformer"].encode())
    return edit(name, data, exp, "config.json", profile=to, target=prof["target"])


BAD = {
    "truncated": None,
    "no env.json": lambda n, d: None if n.endswith("agreement/env.json") else (n, d),
    "escapes": lambda n, d: (n.replace("smoke-pair/", "smoke-pair/../../"), d),
    "two profiles": lambda n, d: (n.replace("smoke-pair/context", "other/context"), d),
    "mixed configs": lambda n, d: profile_of(n, d, "colab-t4"),
    "a token": lambda n, d: (n, d + b"hf_AbCdEfGhIjKlMnOp1234") if n.endswith(".csv") else (n, d),
    "another file": lambda n, d: (n.replace("summary.json", "run.sh"), d),
    "an edited config": lambda n, d: edit(n, d, "agreement", "config.json", False, n_documents=9),
    "two machines": lambda n, d: edit(n, d, "context_sweep", "env.json", cpu_model="Other CPU"),
    "another run's env": lambda n, d: edit(n, d, "agreement", "env.json", profile_dtype="float16"),
    "another device's env": lambda n, d: edit(n, d, "agreement", "env.json", device="cuda:0"),
}


@pytest.mark.parametrize("how", BAD)
def test_a_bad_bundle_is_refused_in_one_line_and_writes_nothing(
    how, smoke_pair_results, tmp_path, capsys, monkeypatch
):
    good = study.write_bundle(smoke_pair_results)
    bad = tmp_path / "bad.zip"
    if BAD[how] is None:
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    else:
        rezip(good, bad, BAD[how])
    monkeypatch.setenv("SPECDEC_RESULTS", str(tmp_path / "results"))
    assert cli.main(["import-bundle", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specdec: error:"), err
    assert not (tmp_path / "results" / "smoke-pair").exists() or not any(
        (tmp_path / "results" / "smoke-pair").iterdir()
    )


def test_a_bundle_of_another_profile_is_refused(smoke_pair_results, tmp_path):
    good = study.write_bundle(smoke_pair_results)
    with pytest.raises(Exception, match="holds profile 'smoke-pair', not 'colab-t4'"):
        bundle.import_bundle(good, tmp_path, "colab-t4")
    assert not (tmp_path / "colab-t4").exists()


@pytest.mark.parametrize(
    "how, says",
    [
        ("an edited config", "agreement/ is mixed or edited: its config_hash"),
        ("two machines", "Other CPU: context_sweep"),
        ("another run's env", "agreement/ is mixed or edited: env.json was a float16 run"),
    ],
)
def test_a_mixed_or_edited_bundle_says_which_experiment(how, says, smoke_pair_results, tmp_path):
    bad = rezip(study.write_bundle(smoke_pair_results), tmp_path / "bad.zip", BAD[how])
    with pytest.raises(Exception, match=re.escape(says)):
        bundle.import_bundle(bad, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_without_t4_results_the_paradox_chapter_says_not_yet_measured(smoke_pair_results):
    S = smoke_pair_results
    text = R.t4_beside(R.load_results("smoke-pair", S.results_dir))
    assert "not yet measured on a T4" in text and "import-bundle" in text


def import_as_t4(zipped: Path, tmp_path: Path) -> Path:
    """A smoke run's bundle, renamed to the quick T4 profile, imported by the command into
    tmp_path/results beside the smoke run's own; returns that results folder."""
    dest = tmp_path / "results"
    t4 = rezip(zipped, tmp_path / "t4.zip", lambda n, d: as_profile(n, d, QUICK))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECDEC_RESULTS", str(dest))
        assert cli.main(["import-bundle", str(t4)]) == 0
        if not (dest / "smoke-pair").exists():
            assert cli.main(["import-bundle", str(zipped)]) == 0
    return dest


QUICK = catalog.QUICK_PROFILE


def test_imported_t4_results_stand_beside_the_chapters_own(smoke_pair_results, tmp_path):
    dest = import_as_t4(study.write_bundle(smoke_pair_results), tmp_path)
    t4 = R.load_results(QUICK, dest)
    assert set(t4.results) == {"agreement", "context_sweep"}
    text = R.t4_beside(R.load_results("smoke-pair", dest))
    assert "not yet measured" not in text and f"`{QUICK}`" in text
    for v in R.verdicts(t4):
        if v.numbers:
            assert md_cell(v.short()) in text  # as the table cell holds it


def assert_the_book_shows_t4(dest: Path) -> None:
    """Build the book of profile smoke-pair from `dest` (beside it) and check that its paradox
    chapter shows the imported T4 results' H3 verdict with its numbers."""
    t4 = R.load_results(QUICK, dest)
    work = dest.parent / "book"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "book" / "build.py"), "--profile", "smoke-pair",
         "--results", str(dest), "--workdir", str(work)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    page = (work / "_build" / "html" / "book" / "paradox.html").read_text(encoding="utf-8")
    assert "not yet measured on a T4" not in page and QUICK in page
    h3 = next(v for v in R.verdicts(t4) if v.key == "H3")
    assert html.escape(h3.label) in page
    for number in re.findall(r"\d+\.\d+", h3.short())[:3]:
        assert number in page


# --- Issue 24's done-when as one chain: the notebook under a stand-in Colab with Drive --------

# The stand-in Colab, as an IPython startup file of the notebook's kernel (Colab's kernel has
# google.colab imported before the first cell): `google.colab` with `drive.mount` (records the
# mount point and makes it a folder whose MyDrive/ the results go to: the library's Drive paths
# point into the test's folder) and `userdata` (no secrets); the first cell's git and pip calls
# answered without a network (the clone is a link to this checkout, pip installs nothing); every
# teacher-forced view of the agreement recorded as (document, context), and with STANDIN_PAUSE_AT
# set the kernel stops before that view and says so, to be killed there.
STANDIN = """
import json, os, subprocess, sys, time, types
from pathlib import Path

sys.path.insert(0, {root!r})
from specdec_study.environment import colab
from specdec_study.experiments import agreement
from specdec_study.runner import lab  # torch loads before the stand-in google.colab (no spec)

HERE = Path({here!r})
colab.DRIVE = {drive!r}
colab.DRIVE_RESULTS = colab.DRIVE + "/MyDrive/specdec-results"

def mount(mountpoint):
    (Path(mountpoint) / "MyDrive").mkdir(parents=True, exist_ok=True)
    with open(HERE / "mounts", "a") as f:
        f.write(mountpoint + "\\n")

def get(name):
    raise KeyError(name)

google = types.ModuleType("google")
google.colab = types.ModuleType("google.colab")
google.colab.drive = types.ModuleType("google.colab.drive")
google.colab.drive.mount = mount
google.colab.userdata = types.ModuleType("google.colab.userdata")
google.colab.userdata.get = get
for m in (google.colab, google.colab.drive, google.colab.userdata):
    sys.modules[m.__name__] = m

real_run = subprocess.run

def run(cmd, *args, **kwargs):
    if cmd[0] == "git" and {{"clone", "fetch", "checkout"}} & set(cmd[1:4]):
        if cmd[1] == "clone":
            Path(cmd[-1]).symlink_to({root!r}, target_is_directory=True)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    if list(cmd[1:4]) == ["-m", "pip", "install"]:
        return subprocess.CompletedProcess(cmd, 0, "stand-in pip: nothing installed\\n", None)
    return real_run(cmd, *args, **kwargs)

subprocess.run = run
real_rows_at = agreement._rows_at
pause_at = int(os.environ.get("STANDIN_PAUSE_AT") or 0)
views = []

def rows_at(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view):
    views.append((doc, context))
    if len(views) == pause_at:
        (HERE / "paused").write_text(str(os.getpid()))
        time.sleep(3600)
    with open(HERE / os.environ["STANDIN_VIEWS"], "a") as f:
        f.write(json.dumps([doc, context]) + "\\n")
    return real_rows_at(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view)

agreement._rows_at = rows_at
"""


def standin_colab(tmp: Path) -> dict[str, str]:
    """The environment of a papermill run whose kernel is the stand-in Colab (in `tmp`)."""
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    source = STANDIN.format(root=str(ROOT), here=str(tmp), drive=str(tmp / "content" / "drive"))
    (startup / "00-standin-colab.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE", *STORED_SECRETS)}
    return {
        **env,
        "IPYTHONDIR": str(tmp / "ipython"),
        "SPECDEC_HOME": str(tmp / "content" / "specdec"),  # where the first cell clones
        "WANDB_MODE": "disabled",
    }


def papermill(tmp: Path, env: dict[str, str], run: str, **extra: str) -> subprocess.Popen:
    """00_quick run by papermill in its own session, results_dir auto and the profile named
    (smoke-pair: "auto" on a Colab runtime without a GPU stops)."""
    (tmp / "content").mkdir(exist_ok=True)
    with open(tmp / f"{run}.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / "00_quick.ipynb"),
             str(tmp / f"{run}.ipynb"), "-k", "python3", "--cwd", str(tmp / "content"),
             "-p", "profile", "smoke-pair",
             "--no-progress-bar"],
            env={**env, "STANDIN_VIEWS": f"{run}.views", **extra},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def views(tmp: Path, run: str) -> list[tuple[int, int]]:
    """The (document, context) of every teacher-forced view run `run` computed."""
    path = tmp / f"{run}.views"
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(json.loads(line)) for line in lines]


def kill_when_paused(proc: subprocess.Popen, tmp: Path, timeout: float = 300) -> None:
    """SIGKILL the kernel (and papermill) once it stopped before the view it was told to."""
    t0 = time.monotonic()
    while not (tmp / "paused").exists():
        assert proc.poll() is None, (tmp / "killed.log").read_text()[-4000:]
        assert time.monotonic() - t0 < timeout, "the kernel never reached the pause"
        time.sleep(0.2)
    os.kill(int((tmp / "paused").read_text()), signal.SIGKILL)  # the runtime dies
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def waited(proc: subprocess.Popen, timeout: float = 600) -> int:
    """The run's exit status; killed (and the test failed) when it takes longer than timeout."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its kernel exits with its parent
        raise


@pytest.mark.slow
def test_the_quick_notebook_killed_in_colab_resumes_and_its_bundle_reaches_the_book(
    tmp_path, quiet
):
    """Done when (issue 24): the quick notebook, executed under a stand-in Colab with Drive (no
    GPU, so the smoke pair is named), killed half-way through its agreement pass, run again in a
    fresh runtime (the clone gone, Drive kept) that resumes without recomputing the finished
    (document, context) pairs and publishes the rows an uninterrupted run gives; its last cell's
    bundle on Drive is imported with `python -m specdec_lib import-bundle` and the built book
    shows its numbers."""
    pytest.importorskip("papermill")
    env = standin_colab(tmp_path)
    results = tmp_path / "content" / "drive" / "MyDrive" / "specdec-results" / "smoke-pair"
    # two views (continuation, text) per pair: paused before the third pair's second view
    kill_when_paused(papermill(tmp_path, env, "killed", STANDIN_PAUSE_AT="6"), tmp_path)
    (checkpoint,) = results.glob(".agreement.partial-*.jsonl")  # on Drive, with the rows
    saved = [json.loads(line) for line in checkpoint.read_text().splitlines()]
    finished = {(r["prompt"], int(r["segment"].split()[-1])) for r in saved}
    assert len(finished) == 2 and set(views(tmp_path, "killed")) == finished | {(1, 10)}
    assert not (results / "agreement").exists()  # killed before it was published

    (tmp_path / "content" / "specdec").unlink()  # a fresh runtime: the clone is gone, Drive not
    resumed = papermill(tmp_path, env, "resumed")
    assert waited(resumed) == 0, (tmp_path / "resumed.log").read_text()[-4000:]
    again = views(tmp_path, "resumed")
    assert again and not finished & set(again)  # the finished pairs were not recomputed
    assert set(again) | finished == {(d, c) for d in (0, 1) for c in (10, 100)}
    assert json.loads((results / "agreement" / "env.json").read_text())["resumed_prompts"] == 2
    assert not list(results.glob(".agreement.partial-*"))
    assert (tmp_path / "mounts").read_text().splitlines() == [str(tmp_path / "content/drive")] * 2
    whole = study.setup("smoke-pair", results_dir=str(tmp_path / "whole"))
    study.run(whole, "agreement")
    uninterrupted = tmp_path / "whole" / "smoke-pair" / "agreement" / "per_prompt.csv"
    assert (results / "agreement" / "per_prompt.csv").read_text() == uninterrupted.read_text()

    zipped = results.parent / "smoke-pair-bundle.zip"  # the last cell's, beside the results
    names = zipfile.ZipFile(zipped).namelist()
    assert {n.split("/")[1] for n in names} == set(QUICK_EXPERIMENTS)
    dest = tmp_path / "results"
    imported = subprocess.run(
        [sys.executable, "-m", "specdec_lib", "import-bundle", str(zipped)],
        capture_output=True, text=True, cwd=ROOT, env={**env, "SPECDEC_RESULTS": str(dest)},
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert (dest / "smoke-pair" / "agreement" / "per_prompt.csv").read_text() == (
        results / "agreement" / "per_prompt.csv"
    ).read_text()
    assert_the_book_shows_t4(import_as_t4(zipped, tmp_path))  # and as a T4 run's bundle


def test_the_quick_sweep_prompts_detect_the_published_fall_by_the_committed_power():
    """The profile's comment on the sweep, recomputed: the tokens-per-call ratio's interval on
    the committed sweep (H4's fixed prompts) detects the published distance at the quick
    profile's prompts, and would not at half of them."""
    f = embedded_finding("H4")
    power = rules.power(rules.Quantity.of(f.inputs["tokens_per_call"]), rules.MATERIAL_RATIO)
    distance = rules.MATERIAL_RATIO - rules.published_ratio()
    n = load_profile(catalog.QUICK_PROFILE)["experiments"]["context_sweep"]["n_prompts"]
    at = lambda m: power.detectable * math.sqrt(power.n / m)  # noqa: E731
    assert at(n) <= distance < at(n // 2)
