"""The quick path (notebook 00_quick, profile colab-t4-quick) on CPU with the smoke pair: the
notebook runs end to end; its agreement pass, killed half-way, resumes without recomputing the
finished (document, context) pairs and publishes the rows an uninterrupted run gives; its results
go into a bundle that `python -m specdec_lib import-bundle` checks and unpacks, and a damaged,
mixed or secret-holding bundle is refused in one line with nothing written."""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from specdec_lib import cli, study
from specdec_lib import report as R
from specdec_lib.analysis import rules
from specdec_lib.config import config_hash
from specdec_lib.environment.profiles import load_profile
from specdec_lib.results import bundle, catalog
from specdec_lib.results.declare import load
from specdec_lib.runner import agreement as agreement_runner

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
    for e in ("agreement", "context_sweep"):
        summary = json.loads((tmp_path / "smoke-pair" / e / "summary.json").read_text())
        assert summary["profile"] == "smoke-pair"
    assert not (tmp_path / "smoke-pair" / "context_sweep_nocache").exists()  # H3/H4 only


def test_the_quick_profile_runs_only_what_decides_h3_and_h4():
    prof = load_profile(catalog.QUICK_PROFILE)
    assert set(prof["experiments"]) == {"agreement", "context_sweep"}
    ag, sw = prof["experiments"]["agreement"], prof["experiments"]["context_sweep"]
    assert ag["contexts"] == sw["contexts"] == ag["test_range"] == [10, 100]
    assert ag["primary"] == sw["primary"] == "gemma-3-1b-pt"
    assert {load(r).name for r in catalog.QUICK.experiments} == set(prof["experiments"])


def test_the_quick_counts_detect_the_published_fall_by_the_committed_power():
    """The profile's comment, recomputed: the widest separate draft's detectable distance at the
    embedded profile's n, scaled to the quick counts, is within the published distance."""
    from specdec_lib.analysis.verdicts import ladder
    from specdec_lib.results.read import load_results

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
    real = agreement_runner._rows_at

    def rows_at(target, drafters, kinds, seq, cont, doc, p, context, view):
        calls.append((doc, context))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return real(target, drafters, kinds, seq, cont, doc, p, context, view)

    monkeypatch.setattr(agreement_runner, "_rows_at", rows_at)
    return calls


def test_a_killed_agreement_pass_resumes_without_recomputing(tmp_path, monkeypatch, quiet):
    S = study.setup("smoke-pair", results_dir=str(tmp_path / "killed"))
    calls = counting(monkeypatch, kill_at=5)  # two views per pair: dies in the third pair
    with pytest.raises(Killed):
        study.run_agreement(S)
    assert not (tmp_path / "killed" / "smoke-pair" / "agreement").exists()
    finished = calls[:4]
    monkeypatch.undo()
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    study.run_agreement(S)
    assert calls and not set(finished) & set(calls)  # the finished pairs were not recomputed
    assert not list((tmp_path / "killed" / "smoke-pair").glob(".agreement.partial-*"))

    whole = study.setup("smoke-pair", results_dir=str(tmp_path / "whole"))
    study.run_agreement(whole)
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
    study.run_agreement(S)
    study.run_context_sweep(S)
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
    for file in ("config.json", "summary.json"):
        name, data = edit(name, data, exp, file, profile=to)
    return name, data


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


def import_as_t4(S, tmp_path: Path) -> Path:
    """The smoke run's bundle, renamed to the quick T4 profile, imported by the command into
    tmp_path/results beside the smoke run's own; returns that results folder."""
    dest = tmp_path / "results"
    t4 = rezip(study.write_bundle(S), tmp_path / "t4.zip", lambda n, d: as_profile(n, d, QUICK))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECDEC_RESULTS", str(dest))
        assert cli.main(["import-bundle", str(t4)]) == 0
        assert cli.main(["import-bundle", str(study.write_bundle(S))]) == 0
    return dest


QUICK = catalog.QUICK_PROFILE


def test_imported_t4_results_stand_beside_the_chapters_own(smoke_pair_results, tmp_path):
    dest = import_as_t4(smoke_pair_results, tmp_path)
    t4 = R.load_results(QUICK, dest)
    assert set(t4.results) == {"agreement", "context_sweep"}
    text = R.t4_beside(R.load_results("smoke-pair", dest))
    assert "not yet measured" not in text and f"`{QUICK}`" in text
    for v in R.verdicts(t4):
        if v.numbers:
            assert v.short() in text.replace("\\|", "|")


@pytest.mark.slow
def test_the_book_shows_an_imported_bundles_numbers(smoke_pair_results, tmp_path):
    """Done when: the quick run's bundle, imported with the command, is in the built book."""
    dest = import_as_t4(smoke_pair_results, tmp_path)
    t4 = R.load_results(QUICK, dest)
    work = tmp_path / "book"
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
