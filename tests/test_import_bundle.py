"""import-bundle (issue 38, cases 2, 3, 4, 6 and 8): names checked against the catalog and the
profile grammar, strict JSON, token-shaped strings in binary files, the batch and book locks,
and a move that a kill at any point leaves with the old result or the new one, never neither."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from test_book import write_synthetic

from specdec_study import cli
from specdec_study.results import bundle
from specdec_study.results.schema import result_problem

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "imported"  # no profiles/imported.yaml: not checked against a profile here
EXPS = ("baseline", "bigram")


def rezip(src: Path, out: Path, change: Callable[[str, bytes], tuple[str, bytes] | None]) -> Path:
    """A copy of the zip at src with each member passed through change (None drops it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            got = change(info.filename, zin.read(info))
            if got is not None:
                zout.writestr(got[0], got[1])
    return out


def with_env(wall: float) -> Callable[[str, bytes], tuple[str, bytes]]:
    """A change giving every env.json a wall_s_experiment of `wall` (what tells two imports
    apart: the import checks do not read it)."""

    def change(name: str, data: bytes) -> tuple[str, bytes]:
        if name.endswith("env.json"):
            env = json.loads(data)
            env["wall_s_experiment"] = wall
            data = json.dumps(env).encode()
        return name, data

    return change


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """'old' and 'new': bundles of the same two experiments, told apart by their env.json."""
    d = tmp_path_factory.mktemp("bundles")
    src = write_synthetic(d / "src", PROFILE, only=set(EXPS), notebooks=False)
    good = bundle.write_bundle(src, d / "good.zip")
    return {
        "old": rezip(good, d / "old.zip", with_env(1.0)),
        "new": rezip(good, d / "new.zip", with_env(2.0)),
    }


def walls(profile_dir: Path) -> dict[str, float | None]:
    """experiment -> its env.json's wall_s_experiment, None where the folder is not whole."""
    out = {}
    for e in EXPS:
        d = profile_dir / e
        ok = d.is_dir() and result_problem(d, study=True) is None
        out[e] = json.loads((d / "env.json").read_text())["wall_s_experiment"] if ok else None
    return out


def refused(capsys, *argv: str) -> str:
    """The one line import-bundle refused with (exit 2)."""
    assert cli.main(["import-bundle", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specdec: error:"), err
    return err


# --------------------------------------------------------------------------------------------
# names, strict JSON, secrets: refused in one line, nothing written

MARKUP_KEY = b'"x`{download}`y <../../z>\\n```{raw} html": 1, '
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


BAD = {
    "notebooks": lambda n, d: (n.replace("/baseline/", "/notebooks/"), d),
    "an unknown experiment": lambda n, d: (n.replace("/bigram/", "/bigram2/"), d),
    "a backtick in an experiment": lambda n, d: (n.replace("/bigram/", "/big`ram/"), d),
    "a backtick in a file": lambda n, d: (n.replace("per_prompt.csv", "per`prompt.csv"), d),
    "markup in a file name": lambda n, d: (
        n.replace("env.json", "<img src=x onerror=alert(38)>.json"),
        d,
    ),
    "a hidden file": lambda n, d: (n.replace("env.json", ".env.json"), d),
    "a profile of another grammar": lambda n, d: (n.replace(f"{PROFILE}/", "colab t4/"), d),
    "markup in a headline key": lambda n, d: (
        (n, d.replace(b'"headline": {', b'"headline": {' + MARKUP_KEY))
        if n.endswith("baseline/summary.json")
        else (n, d)
    ),
    "NaN": lambda n, d: (n, d.replace(b'"seed": 0', b'"seed": NaN')),
    "Infinity": lambda n, d: (n, d.replace(b'_experiment": 1.0', b'_experiment": -Infinity')),
    "an overflow": lambda n, d: (n, d.replace(b'_experiment": 1.0', b'_experiment": 1e999')),
    "a token in a PNG": lambda n, d: (
        (n.replace("env.json", "figures/x.png"), PNG + b"hf_AbCdEfGhIjKlMnOp1234" + PNG)
        if n.endswith("bigram/env.json")
        else (n, d)
    ),
}  # fmt: skip


@pytest.mark.parametrize("how", BAD)
def test_a_bundle_with_bad_names_or_values_is_refused_in_one_line(
    how, bundles, tmp_path, capsys, monkeypatch
):
    bad = rezip(bundles["old"], tmp_path / "bad.zip", BAD[how])
    if how == "a token in a PNG":  # beside the env.json it replaced
        with zipfile.ZipFile(bundles["old"]) as z, zipfile.ZipFile(bad, "a") as out:
            out.writestr(f"{PROFILE}/bigram/env.json", z.read(f"{PROFILE}/bigram/env.json"))
    results = tmp_path / "results"
    monkeypatch.setenv("SPECDEC_RESULTS", str(results))
    refused(capsys, str(bad))
    assert not results.exists()


def test_a_bundle_into_a_results_folder_whose_profile_is_a_file_is_refused(
    bundles, tmp_path, capsys, monkeypatch
):
    results = tmp_path / "results"
    results.mkdir()
    (results / PROFILE).write_text("not a folder\n")
    monkeypatch.setenv("SPECDEC_RESULTS", str(results))
    refused(capsys, str(bundles["old"]))
    assert (results / PROFILE).read_text() == "not a folder\n"


def test_names_problem_accepts_the_results_layout():
    from pathlib import PurePosixPath as P

    ok = [P(f"{PROFILE}/baseline/per_prompt.csv"), P(f"{PROFILE}/k_sweep/figures/a_b-1.png")]
    assert bundle.names_problem(PROFILE, ok) is None
    assert bundle.names_problem(PROFILE, [P(f"{PROFILE}/baseline/x/y.csv")]) is not None


# --------------------------------------------------------------------------------------------
# locks


def _hold(command: list[str], ready: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None and ready in proc.stdout.readline()
    return proc


HOLD_BOOK = (
    "import sys, time; from pathlib import Path; from specdec_study.results.locks import reading\n"
    "with reading(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)"
)


@pytest.mark.parametrize("holder", ["batch", "book"])
def test_an_import_during_a_batch_or_a_book_build_is_refused_in_one_line(
    holder, bundles, tmp_path, capsys, monkeypatch
):
    results = tmp_path / "results"
    monkeypatch.setenv("SPECDEC_RESULTS", str(results))
    assert cli.main(["import-bundle", str(bundles["old"])]) == 0
    folder = results / PROFILE
    if holder == "batch":
        hold = "print('held', flush=True); import time; time.sleep(60)"
        cmd = [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--",
               sys.executable, "-c", hold]  # fmt: skip
    else:
        cmd = [sys.executable, "-c", HOLD_BOOK, str(folder)]
    proc = _hold(cmd, "held")
    try:
        err = refused(capsys, str(bundles["new"]), "--replace")
        assert holder in err
        assert walls(folder) == {e: 1.0 for e in EXPS}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    assert cli.main(["import-bundle", str(bundles["new"]), "--replace"]) == 0  # once released
    assert walls(folder) == {e: 2.0 for e in EXPS}


# --------------------------------------------------------------------------------------------
# a kill at every point of the move, and an error part-way

KILLER = """
import os, shutil, signal, sys
from pathlib import Path
from specdec_study.results import bundle
kill_at, exchange = int(sys.argv[3]), sys.argv[4] == "exchange"
calls = [0]
def counted(f):
    def g(*a, **k):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return f(*a, **k)
    return g
if not exchange:
    bundle._exchange = lambda a, b: False
Path.rename = counted(Path.rename)
Path.mkdir = counted(Path.mkdir)
bundle._exchange = counted(bundle._exchange)
bundle.shutil.copytree = counted(shutil.copytree)
bundle.shutil.rmtree = counted(shutil.rmtree)
bundle.import_bundle(Path(sys.argv[1]), Path(sys.argv[2]), replace=True)
print("calls", calls[0])
"""


@pytest.mark.parametrize("swap", ["exchange", "two renames"])
def test_a_kill_at_any_point_of_a_replacing_import_leaves_old_or_new(swap, bundles, tmp_path):
    """With an atomic exchange (Linux) every experiment is old or new after any kill; with two
    renames (a filesystem without the exchange), a kill between them leaves the old one hidden
    beside its place, and what the next import does first (clear_staged) puts it back."""
    results = tmp_path / "results"
    bundle.import_bundle(bundles["old"], results)
    folder = results / PROFILE
    points = 0
    for kill_at in range(1, 60):
        proc = subprocess.run(
            [sys.executable, "-c", KILLER, str(bundles["new"]), str(results), str(kill_at), swap],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        state = walls(folder)
        if swap == "two renames" and None in state.values():
            assert [p.name for p in folder.glob(f"{bundle.STAGED}*-old")], state
            bundle.clear_staged(folder)
            state = walls(folder)
        assert all(w in (1.0, 2.0) for w in state.values()), (kill_at, state, proc.stderr)
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        points += 1
        bundle.import_bundle(bundles["old"], results, replace=True)  # back to old, leftovers gone
        assert walls(folder) == {e: 1.0 for e in EXPS}
        assert not list(folder.glob(f"{bundle.STAGED}*"))
    assert points >= 6 and walls(folder) == {e: 2.0 for e in EXPS}
    assert not list(folder.glob(f"{bundle.STAGED}*"))


def test_an_error_part_way_through_the_swaps_puts_the_old_results_back(
    bundles, tmp_path, monkeypatch
):
    results = tmp_path / "results"
    bundle.import_bundle(bundles["old"], results)
    swaps = []
    real = bundle.swap_in

    def failing(staged: Path, dest: Path) -> None:
        swaps.append(dest.name)
        if len(swaps) == 2:
            raise KeyboardInterrupt  # SIGINT between the two experiments
        real(staged, dest)

    monkeypatch.setattr(bundle, "swap_in", failing)
    with pytest.raises(KeyboardInterrupt):
        bundle.import_bundle(bundles["new"], results, replace=True)
    monkeypatch.setattr(bundle, "swap_in", real)
    assert walls(results / PROFILE) == {e: 1.0 for e in EXPS}
    assert not list((results / PROFILE).glob(f"{bundle.STAGED}*"))


def test_an_error_part_way_through_a_first_import_leaves_nothing(bundles, tmp_path, monkeypatch):
    results = tmp_path / "results"
    calls = []
    real = bundle.swap_in

    def failing(staged: Path, dest: Path) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(staged, dest)

    monkeypatch.setattr(bundle, "swap_in", failing)
    with pytest.raises(OSError):
        bundle.import_bundle(bundles["new"], results)
    assert not [p for p in (results / PROFILE).iterdir() if not p.name.startswith(".")]


# --------------------------------------------------------------------------------------------
# checked against the profile it names (case 7)


def as_colab_t4(name: str, data: bytes, **config) -> tuple[str, bytes]:
    """A member moved under profile colab-t4, its config given `config` (hash recomputed)."""
    from specdec_lib.config import config_hash

    name = name.replace(f"{PROFILE}/", "colab-t4/", 1)
    if name.endswith(("config.json", "summary.json")):
        d = {**json.loads(data), "profile": "colab-t4"}
        if name.endswith("config.json"):
            d.update(config)
            d["config_hash"] = config_hash({k: v for k, v in d.items() if k != "config_hash"})
        data = json.dumps(d).encode()
    return name, data


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"target": "embedded"}, "is not the profile's 'google/gemma-3-4b-pt'"),
        (
            {"target": "google/gemma-3-4b-pt", "arms": {"baseline": "none", "d": "model:x/y"}},
            "'model:x/y', which the profile never names",
        ),
    ],
)
def test_a_bundle_measured_under_another_profile_is_refused(
    bundles, tmp_path, capsys, monkeypatch, config, says
):
    bad = rezip(bundles["old"], tmp_path / "t4.zip", lambda n, d: as_colab_t4(n, d, **config))
    monkeypatch.setenv("SPECDEC_RESULTS", str(tmp_path / "results"))
    assert says in refused(capsys, str(bad))
    assert not (tmp_path / "results").exists()


def test_profile_problem_accepts_a_run_of_the_profile():
    from specdec_study.environment.profiles import load_profile

    prof = load_profile("colab-t4")
    config = {
        "target": prof["target"],
        "arms": {"baseline": "none", "g": prof["drafts"]["transformer"]},
    }
    assert bundle.profile_problem(prof, config, {"device": "cuda:0"}) is None
