"""Fault injection, third round (issue 25): each case an adversarial user found (a flag read as
text, a profile refused only after a notebook started, schema gaps, a config hash blind to some
profile keys, damaged checkpoints and notebooks, unbounded drafters, unreadable result folders, a
model cache build cut short, W&B without a network, a killed batch holder) ends in one line or a
repair, never in a traceback, a stale result or an orphan."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import whole_config, whole_summary, write_profile

from specdec_lib.errors import SpecdecError

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------- 3. -p force false


@pytest.mark.parametrize(("value", "forced"), [("false", False), ("no", False), ("False", False),
                                               ("0", False), (0, False), ("true", True),
                                               ("yes", True), (1, True), (True, True)])  # fmt: skip
def test_force_given_as_text_is_parsed_like_FORCE(tmp_path, monkeypatch, value, forced):
    from specdec_study.runner.session import setup

    monkeypatch.delenv("FORCE", raising=False)
    assert setup("smoke", results_dir=str(tmp_path), force=value).force is forced


@pytest.mark.parametrize(("force", "env"), [("maybe", ""), (2, ""), (False, "perhaps")])
def test_a_force_that_is_neither_true_nor_false_is_one_line(tmp_path, monkeypatch, force, env):
    from specdec_study.runner.session import setup

    monkeypatch.setenv("FORCE", env)
    with pytest.raises(SpecdecError, match="must be true or false") as e:
        setup("smoke", results_dir=str(tmp_path), force=force)
    assert "\n" not in str(e.value)


def test_FORCE_no_in_the_environment_does_not_force(tmp_path, monkeypatch):
    from specdec_study.runner.session import setup

    monkeypatch.setenv("FORCE", "no")
    assert setup("smoke", results_dir=str(tmp_path)).force is False


# ----------------------------------------------------------------- 11. make evaluate PROFILE=nosuch


def test_make_evaluate_with_an_unknown_profile_is_one_line_and_creates_nothing(tmp_path):
    stamp = tmp_path / "stamp"
    stamp.touch()  # newer than requirements.txt: `setup` has nothing to do
    results = tmp_path / "results"
    done = subprocess.run(
        ["make", "--no-print-directory", "evaluate", "PROFILE=nosuch", f"RESULTS_DIR={results}",
         f"PY={sys.executable}", f"STAMP={stamp}", "VENV=/nonexistent-venv"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    ours = [ln for ln in done.stderr.splitlines() if not ln.startswith("make")]
    assert len(ours) == 1 and ours[0].startswith("specdec: error: no profile 'nosuch'"), done
    assert not results.exists()


# ----------------------------------------------------------------- 10. profile schema gaps


SCHEMA_GAPS = [
    (lambda p: p.update(tiny={"vocab": -5, "hidden": "x"}), "tiny.hidden must be an integer >= 2"),
    (lambda p: p.update(tiny={"vocab": -5}), "tiny.vocab must be an integer >= 16, got -5"),
    (lambda p: p.update(tiny={"hidden": 64, "heads": 3}), "tiny.hidden must be a multiple"),
    (lambda p: p.update(tiny={"width": 3}), "tiny.width must be one of vocab"),
    (lambda p: p.update(tiny_draft={"layers": 0}), "tiny_draft.layers must be an integer >= 1"),
    (lambda p: p.update(tiny={"conditional": "yes"}), "tiny.conditional must be true or false"),
    (lambda p: p["experiments"]["k_sweep"].update(adaptive={"k_start": 8, "k_min": 6, "k_max": 2}),
     "adaptive.k_max must be >= experiments.k_sweep.adaptive.k_start (8), got 2"),
    (lambda p: p["experiments"]["k_sweep"].update(adaptive={"k_start": 2, "k_min": 3}),
     "adaptive.k_start must be >= experiments.k_sweep.adaptive.k_min (3), got 2"),
    (lambda p: p["experiments"]["agreement"].update(test_range=[100, 10]),
     "test_range must be two integers [low, high] with 1 <= low < high, got [100, 10]"),
    (lambda p: p["experiments"]["agreement"].update(test_range=[10]), "test_range must be two"),
    (lambda p: p.update(name="../../escape"), "name must be a plain name"),
    (lambda p: p.update(name="other"), "name must be the file's name without .yaml ('bad')"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "needle"), SCHEMA_GAPS)
def test_schema_gaps_are_one_line(tmp_path, edit, needle):
    from specdec_study.environment.profiles import load_profile

    path = write_profile(tmp_path, "bad", edit)
    with pytest.raises(SpecdecError) as e:
        load_profile(str(path))
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


# ----------------------------------------------------------------- 2. the config hash, complete

# profile keys that do not change what an experiment measures, each with the reason
NOT_MEASURED = {
    "threads": "how fast, not what: like the CPU it runs on, recorded in env.json (threads)",
}
# keys that count only in some profiles, with the test of when they do not
UNUSED_WHEN = {
    "experiments.context_sweep.n_prompts_beyond_100": lambda prof: (
        max(prof["experiments"]["context_sweep"]["contexts"]) <= 100
    ),  # it sizes contexts above 100 only (the config's n_prompts_by_context)
}


def all_configs(prof: dict) -> dict[str, str]:
    """Experiment -> the hash of its config under this profile ('refused: ...' when the config
    refuses the profile: a refusal is never a silent reuse)."""
    from specdec_lib.config import config_hash
    from specdec_study.experiments import peers, speculative_sampling
    from specdec_study.runner.experiments import RUNNERS
    from specdec_study.runner.lab import Lab
    from specdec_study.runner.session import Session

    S = Session(prof, Path("/nonexistent"))
    makers = {
        "baseline": RUNNERS["baseline"].config,
        "bigram": RUNNERS["bigram"].config,
        "transformer_draft": RUNNERS["transformer_draft"].config,
        "context_sweep": RUNNERS["context_sweep"].config,
        "context_sweep_nocache": RUNNERS["context_sweep_nocache"].config,
        "agreement": RUNNERS["agreement"].config,
        "k_sweep": RUNNERS["k_sweep"].config,
        "sampling": lambda S: speculative_sampling.config(Lab(S, speculative_sampling.sampling)),
        "peers": lambda S: peers.peers_config(Lab(S, peers.peers), None),
        "implementations": RUNNERS["implementations"].config,
    }
    out = {}
    for name, make in makers.items():
        try:
            out[name] = config_hash(make(S))
        except SpecdecError as e:
            out[name] = f"refused: {e}"
    return out


def leaves(node, path=()):
    """(key path, value) of every scalar or list in a profile."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    else:
        yield path, node


def changed(value):
    """Another value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1] if value else ["float32"]
    return 1


@pytest.mark.parametrize("profile", ["smoke", "smoke-pair", "embedded", "colab-t4"])
def test_every_profile_key_changes_the_config_hash_or_is_listed_with_its_reason(profile):
    import copy

    from specdec_study.environment.profiles import load_profile

    prof = load_profile(profile)
    before = all_configs(prof)
    blind = []
    for path, value in leaves(prof):
        key = ".".join(map(str, path))
        if key in NOT_MEASURED or (key in UNUSED_WHEN and UNUSED_WHEN[key](prof)):
            continue
        edited = copy.deepcopy(prof)
        node = edited
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = changed(value)
        if all_configs(edited) == before:
            blind.append(key)
    assert blind == [], f"{profile}: the config hash does not see {blind}"


# ----------------------------------------------------------------- 5. an unbounded tree


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("tree:100000", "100000 is more than 256"), ("tree:8:100000", "100000 is more than 16"),
     ("tree+shared:16:1000", "1000 is more than 64"), ("tree+bigram:100000", "more than 256")],
)  # fmt: skip
def test_a_tree_too_large_to_verify_is_refused_like_too_many_layers(spec, needle):
    from specdec_lib.drafters.registry import parse

    with pytest.raises(SpecdecError) as e:
        parse(spec)
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert parse("tree:256:16").args == (256, 16)


# ----------------------------------------------------------------- 6. a non-UTF-8 checkpoint


def test_a_non_utf8_byte_in_a_checkpoint_is_one_warning_naming_the_file(tmp_path, capsys):
    from specdec_study.results.store import Checkpoint, ResultStore

    store = ResultStore(tmp_path, "p")
    config = {"experiment": "a", "n": 2}
    first = Checkpoint(store, "a", config, fresh=False)
    first.add("seg", 0, [1, 2], [{"prompt": 0, "tokens": [1, 2]}])
    first.add("seg", 1, [3, 4], [{"prompt": 1, "tokens": [3, 4]}])
    lines = first.path.read_bytes().split(b"\n")
    first.path.write_bytes(lines[0] + b"\n" + lines[1][:20] + b"\xff\xfe" + lines[1][20:] + b"\n")
    again = Checkpoint(store, "a", config, fresh=False)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(first.path) in err and "1 damaged line" in err
    assert list(again.done("seg", [[1, 2], [3, 4]])) == [0]  # prompt 1 is recomputed


def test_a_torn_last_checkpoint_line_is_skipped_quietly(tmp_path, capsys):
    from specdec_study.results.store import Checkpoint, ResultStore

    store = ResultStore(tmp_path, "p")
    first = Checkpoint(store, "a", {"n": 1}, fresh=False)
    first.add("seg", 0, [1], [{"prompt": 0}])
    with open(first.path, "ab") as f:
        f.write(b'{"segment": "seg", "pro')
    again = Checkpoint(store, "a", {"n": 1}, fresh=False)
    assert capsys.readouterr().err == "" and list(again.done("seg", [[1]])) == [0]


# ----------------------------------------------------------------- 9, 12. published results


def publish_three(root: Path) -> Path:
    from specdec_study.results.store import ResultStore, publish

    rows = [{"prompt": i, "method": "baseline", "wall_s": 0.1 * i} for i in range(3)]
    summary = whole_summary("baseline", "p")
    config = {**whole_config("baseline", "p"), "n_prompts": 3}
    return publish(ResultStore(root, "p"), "baseline", config, {"python": "3"}, rows, summary)


def test_a_per_prompt_csv_cut_at_a_line_boundary_is_not_trusted(tmp_path):
    from specdec_study.results.schema import result_problem
    from specdec_study.results.store import ResultStore

    d = publish_three(tmp_path)
    assert result_problem(d, study=True) is None
    csv_path = d / "per_prompt.csv"
    lines = csv_path.read_text(encoding="utf-8").splitlines(keepends=True)
    csv_path.write_text("".join(lines[:2]), encoding="utf-8")  # the header and 1 of 3 rows
    assert result_problem(d, study=True) == "per_prompt.csv has 1 rows, summary.json records 3"
    assert not ResultStore(tmp_path, "p").done("baseline", {"experiment": "baseline"}, study=True)
    csv_path.write_text("".join(lines).replace("0.1", "0.2"), encoding="utf-8")
    assert "sha256 differs" in result_problem(d)


def test_published_result_folders_are_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        d = publish_three(tmp_path)
    finally:
        os.umask(old)
    assert d.stat().st_mode & 0o777 == 0o755
    assert {f.stat().st_mode & 0o777 for f in d.iterdir()} == {0o644}


# ----------------------------------------------------------------- 7. a truncated notebook


def test_a_truncated_executed_notebook_is_shown_as_not_run_in_one_line(tmp_path, capsys):
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    nbs = tmp_path / "results" / "p" / "notebooks"
    nbs.mkdir(parents=True)
    whole = (ROOT / "results/embedded/notebooks/01_baseline.ipynb").read_bytes()
    (nbs / "01_baseline.ipynb").write_bytes(whole[: len(whole) // 2])
    workdir = tmp_path / "book"
    workdir.mkdir()
    shutil.copy(ROOT / "_toc.yml", workdir / "_toc.yml")
    status = build.stage(workdir, "p", tmp_path / "results", strict=False)
    assert status["01_baseline"] == "placeholder"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "01_baseline.ipynb cannot be read" in err
    assert "Traceback" not in err
    with pytest.raises(build.BookError, match="--strict: no executed notebook for 01_baseline"):
        build.stage(workdir, "p", tmp_path / "results", strict=True)


# ----------------------------------------------------------------- 8. a model cache build cut short


@pytest.fixture
def incomplete_cache(tmp_path, monkeypatch) -> Path:
    """An embedded cache folder without its marker (a build is due), the package 'installed'."""
    from specdec_lib.models import embedded

    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded, "_has_module", lambda name: True)
    d = embedded.embedded_cache_dir()
    d.mkdir(parents=True)
    return d


def test_a_full_disk_during_the_cache_build_is_one_line(incomplete_cache, monkeypatch):
    from safetensors import SafetensorError

    from specdec_lib.models import embedded

    def full_disk(target: Path) -> None:
        raise SafetensorError(
            "Error while serializing: IoError(Os { code: 28, kind: StorageFull })"
        )

    monkeypatch.setattr(embedded, "_build_embedded_cache", full_disk)
    with pytest.raises(SpecdecError, match="cannot be written \\(SafetensorError: Error whi") as e:
        embedded.ensure_embedded_cache()
    assert "\n" not in str(e.value)


def test_a_half_built_cache_folder_left_by_a_killed_build_is_removed(incomplete_cache, monkeypatch):
    from specdec_lib.models import embedded

    stale = incomplete_cache.parent / f".{embedded.EMBEDDED_DIRNAME}-k1ll3d"
    (stale / "gguf").mkdir(parents=True)
    (stale / "gguf" / "part").write_bytes(b"x" * 1000)
    built = []
    monkeypatch.setattr(embedded, "_build_embedded_cache", built.append)
    monkeypatch.setattr(embedded, "cache_problem", lambda d, full=False: None if built else "x")
    embedded.ensure_embedded_cache()
    assert built and not stale.exists()
    # one left beside a cache that is complete goes on the next load
    (stale / "gguf").mkdir(parents=True)
    embedded.ensure_embedded_cache()
    assert not stale.exists()


# ----------------------------------------------------------------- 4. W&B with a key and no network


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never answers (a network that hangs)."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def test_wandb_without_network_falls_back_to_offline_in_bounded_time_said_once(
    silent_server, tmp_path, monkeypatch, capsys
):
    import time

    pytest.importorskip("wandb")
    from specdec_study.environment import tracking

    monkeypatch.setattr(tracking, "_WENT_OFFLINE", False, raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_API_KEY", "fakewandbkey0123456789abcdef0123456789ab")
    monkeypatch.setenv("WANDB_BASE_URL", silent_server)
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "4")
    t0 = time.monotonic()
    first = tracking.Tracker("p", "a", {"x": 1}, dir=tmp_path)
    try:
        assert first.run is not None and first.run.offline
    finally:
        first.finish()
    t1 = time.monotonic()
    second = tracking.Tracker("p", "b", {"x": 2}, dir=tmp_path)
    try:
        assert second.run is not None and second.run.offline
    finally:
        second.finish()
    assert t1 - t0 < 60 and time.monotonic() - t1 < 30
    err = capsys.readouterr().err
    assert err.count("logging offline") == 1 and "no answer from the server within 4 s" in err


# ----------------------------------------------------------------- 1. the lock holder killed

BATCH_SCRIPT = """
import subprocess, sys, time, pathlib
sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
same = subprocess.Popen(sleep)                             # like make's papermill
own = subprocess.Popen(sleep, start_new_session=True)      # like the Jupyter kernel
pathlib.Path(sys.argv[1]).write_text(f"{same.pid} {own.pid}")
time.sleep(120)
"""


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_to_the_lock_holder_stops_the_whole_batch_before_the_lock_is_released(tmp_path):
    import signal
    import time

    folder = tmp_path / "results" / "smoke"
    pids_file = tmp_path / "pids"
    holder = subprocess.Popen(
        [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--",
         sys.executable, "-c", BATCH_SCRIPT, str(pids_file)],
        cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    batch: list[int] = []
    try:
        for _ in range(600):
            if pids_file.exists() and pids_file.read_text():
                break
            assert holder.poll() is None
            time.sleep(0.1)
        batch = [int(p) for p in pids_file.read_text().split()]
        assert all(running(p) for p in batch)
        holder.send_signal(signal.SIGTERM)
        assert holder.wait(timeout=60) == 128 + signal.SIGTERM
        assert [p for p in batch if running(p)] == []  # no orphan left with the lock released
    finally:
        for pid in batch:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    again = subprocess.run(
        [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--", "true"],
        cwd=ROOT,
        timeout=120,
    )
    assert again.returncode == 0


# ----------------------------------------------------------------- FORCE= on the make line


def make_evaluate(tmp_path: Path, force: str, *flags: str) -> subprocess.CompletedProcess:
    """`make evaluate PROFILE=smoke FORCE=<force>` with a PY that only records that it ran."""
    stamp = tmp_path / "stamp"
    stamp.touch()  # newer than requirements.txt: `setup` has nothing to do
    ran = tmp_path / "ran"
    spy = tmp_path / "spy"
    spy.write_text(f'#!/bin/sh\necho "$@" >> {ran}\n')
    spy.chmod(0o755)
    return subprocess.run(
        ["make", "--no-print-directory", *flags, "evaluate", "PROFILE=smoke", f"FORCE={force}",
         f"RESULTS_DIR={tmp_path / 'results'}", f"PY={spy}", f"STAMP={stamp}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("force", ["maybe", "2", "ja", "1 1", "tru"])
def test_an_invalid_FORCE_on_the_make_line_is_refused_in_one_line_before_anything_runs(
    tmp_path, force
):
    done = make_evaluate(tmp_path, force)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "FORCE must be true or false (1/0, yes/no)" in lines[0], lines
    assert f"got '{force}'" in lines[0]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("force", "flag"),
    [("1", "True"), ("TRUE", "True"), ("yes", "True"), ("On", "True"), ("0", "False"),
     ("no", "False"), ("False", "False"), ("off", "False"), ("", "False")],
)  # fmt: skip
def test_FORCE_on_the_make_line_reaches_the_notebooks_as_parse_flag_reads_it(tmp_path, force, flag):
    from specdec_study.runner.session import parse_flag

    done = make_evaluate(tmp_path, force, "-n", "_evaluate-locked")
    assert done.returncode == 0, done.stderr
    assert f"-p force {flag} " in done.stdout
    assert str(parse_flag(force, "FORCE")) == flag


EXITING_TRACKER = """
import sys, tempfile, time
from specdec_study.environment import tracking
t = tracking.Tracker("p", "a", {"x": 1}, dir=tempfile.mkdtemp())
assert t.run is not None and t.run.offline
t.log({"a": 1})
t.finish()
print(time.time(), flush=True)
"""


def test_a_process_that_fell_back_from_an_unreachable_wandb_exits_promptly(silent_server):
    """The fallback asks the server before wandb does: an online start that wandb abandons
    stays pending in its service and held the process's exit for over 20 s."""
    import time

    pytest.importorskip("wandb")
    env = {k: v for k, v in os.environ.items() if k not in ("WANDB_MODE", "WANDB_SILENT")}
    env.update(
        WANDB_API_KEY="fakewandbkey0123456789abcdef0123456789ab", WANDB_BASE_URL=silent_server,
        WANDB_INIT_TIMEOUT="2", PYTHONPATH=str(ROOT),
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", EXITING_TRACKER], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=180,
    )  # fmt: skip
    exit_wait = time.time() - float(done.stdout.split()[-1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("logging offline") == 1
    assert exit_wait < 10, f"the process took {exit_wait:.0f} s to exit after the run finished"
