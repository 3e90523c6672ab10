"""The config hash is complete (issue 25, item 2): every profile key changes the hash of the
experiments that read it, or is listed here as not changing what is measured, with the reason;
and the files behind the names (the target's and the drafts' weights, the data file) are
fingerprinted in env.json, so a stored result whose inputs changed is recomputed, not reused. A
checkpoint is kept per machine, dtype and inputs, so a resumed run never mixes rows of two
machines."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import whole_config, whole_summary

from specdec_lib.config import config_hash
from specdec_lib.errors import SpecdecError
from specdec_study import study
from specdec_study.results import inputs
from specdec_study.results.catalog import EXPERIMENTS
from specdec_study.runner.experiments import RUNNERS

# top-level profile keys that change how fast a run goes, never what it measures
NOT_AFFECTING = {
    ("threads",): "speed only (torch's intra-op thread count); env.json records it (`threads`)",
}
# keys a profile holds that its own values make unread (the same key elsewhere is checked)
UNREAD_IN = {
    ("smoke", ("experiments", "context_sweep", "n_prompts_beyond_100")): (
        "the prompt count of contexts above 100, and smoke's sweep stops at 100"
    ),
}


def leaves(d: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path to a value that is not a mapping (a list is one value)."""
    for key, value in d.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, (*path, key))
        else:
            yield (*path, key)


def changed(value: Any, key: str, siblings: dict[str, Any], profile: dict[str, Any]) -> Any:
    """Another valid value of the same kind: a number one up, a flag flipped, a spec with a
    digit added, a list one shorter (or one longer when empty), a primary draft that is another
    of its section's drafts."""
    if key == "primary":
        return next(name for name in siblings["drafts"] if name != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.25
    if isinstance(value, str):
        return value + "1"  # self:2 -> self:21, embedded -> embedded1, auto -> auto1
    if isinstance(value, list):
        if value:
            return value[:-1]
        if key == "drafts":  # context_sweep_nocache's: a subset of the sweep's draft names
            return [next(iter(profile["experiments"]["context_sweep"]["drafts"]))]
        return ["self:1"]
    raise AssertionError(f"no changed value for {key}={value!r}")


def hashes(profile: dict[str, Any]) -> dict[str, str]:
    """Each experiment's config hash, or `refused: ...` where its config refuses the profile (a
    changed value refused cannot reuse a result either: e.g. a draft renamed that another key
    still names)."""
    S = study.Session(profile, study.ROOT / "results")
    out = {}
    for e in EXPERIMENTS:
        try:
            out[e] = config_hash(RUNNERS[e].config(S))
        except SpecdecError as err:
            out[e] = f"refused: {err}"
    return out


@pytest.mark.parametrize("name", ["embedded", "smoke"])
def test_every_profile_key_changes_the_hash_of_the_experiments_that_read_it(name):
    """A top-level key (the model, dtype, device, data, seeds, K, warm-up, the tiny models'
    options) changes every experiment's hash; an experiment's key its own; a draft spec at
    least one. Planted and seen failing: `warmup` dropped from base_config, and the `tiny`
    options dropped (issue 25's silent reuse)."""
    profile = study.load_profile(name)
    base = hashes(profile)
    missed = []
    for path in leaves(profile):
        if path in NOT_AFFECTING or (name, path) in UNREAD_IN:
            continue
        changed_profile = copy.deepcopy(profile)
        parent = changed_profile
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = changed(parent[path[-1]], path[-1], parent, changed_profile)
        now = hashes(changed_profile)
        moved = {e for e in EXPERIMENTS if now[e] != base[e]}
        if path[0] == "experiments":
            want = {path[1]} | ({"context_sweep_nocache"} if path[1] == "context_sweep" else set())
            if path[1] == "context_sweep" and path[2] in ("anchor_min", "anchor_room", "contexts"):
                want.add("implementations")  # the positive control runs on the sweep's documents
            ok = path[1] in moved and moved <= want
        elif path[0] == "drafts":
            ok = bool(moved)
        else:
            ok = moved == set(EXPERIMENTS)
        if not ok:
            missed.append(f"{'.'.join(path)}: changes {sorted(moved) or 'no experiment'}")
    assert not missed, f"profile {name}: keys the config hash does not see as it should: {missed}"


def test_the_keys_listed_as_not_affecting_results_exist_and_leave_the_hash_alone():
    for name in ("embedded", "smoke"):
        profile = study.load_profile(name)
        base = hashes(profile)
        for path, reason in NOT_AFFECTING.items():
            assert reason
            other = copy.deepcopy(profile)
            other[path[0]] = int(other.get(path[0]) or 1) + 1
            assert hashes(other) == base, path


# --------------------------------------------------------------------------- input fingerprints


def test_a_fingerprint_names_the_file_that_changed_and_keeps_large_digests_beside_them(
    tmp_path, monkeypatch
):
    """A model folder's weights, config and tokenizer files, and the data file, by sha256; a
    large file's digest is read back from beside it (keyed on size and mtime) instead of being
    recomputed; a changed file is named; a note (tiny model, model not here) is never compared."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"w" * 100)
    (folder / "config.json").write_text("{}")
    (folder / "notes.txt").write_text("not read by a run")
    data = tmp_path / "wiki.test.raw"
    data.write_text("= A =\n text\n")
    monkeypatch.setattr(inputs, "BUNDLED_PATH", data)
    cfg = {"target": "m", "data_source": "bundled", "arms": {"d": "model:far/away"}}

    def where(name: str) -> Path | None:
        return folder if name == "m" else None

    first = inputs.fingerprint(cfg, where)
    assert set(first["target m"]) == {"model.safetensors", "config.json"}
    assert first["draft far/away"] == "not on this machine: not fingerprinted"
    assert first["data bundled"] == {"wiki.test.raw": inputs.sha256_of(data)}
    assert inputs.changed_input(first, inputs.fingerprint(cfg, where)) is None

    (folder / "model.safetensors").write_bytes(b"v" * 100)
    assert inputs.changed_input(first, inputs.fingerprint(cfg, where)) == (
        "target m: model.safetensors changed (another sha256)"
    )
    data.write_text("= B =\n text\n")
    assert inputs.changed_input(first, inputs.fingerprint(cfg, where)).startswith("data bundled")
    tiny = {"target": "tiny-random", "data_source": "bundled", "arms": {}}
    assert inputs.fingerprint(tiny, where)["target tiny-random"] == inputs.TINY_NOTE

    monkeypatch.setattr(inputs, "CACHE_ABOVE", 10)  # every file counts as large
    inputs._MEMO.clear()
    inputs.sha256_of(folder / "model.safetensors")
    kept = json.loads((folder / inputs.DIGEST_FILE).read_text())
    kept["model.safetensors"]["sha256"] = "0" * 64  # what a cached digest would give back
    (folder / inputs.DIGEST_FILE).write_text(json.dumps(kept))
    inputs._MEMO.clear()
    assert inputs.sha256_of(folder / "model.safetensors") == "0" * 64  # read, not recomputed
    (folder / "model.safetensors").write_bytes(b"u" * 101)  # another size: hashed again
    assert inputs.sha256_of(folder / "model.safetensors") != "0" * 64


def saved_tiny_model(folder: Path, seed: int) -> Path:
    """The smoke profile's tiny target saved as a local model folder (weights, config,
    tokenizer), its weights drawn from `seed`."""
    from specdec_study.runner.tiny import tiny_random_model

    loaded = tiny_random_model("float64", **{**study.load_profile("smoke")["tiny"], "seed": seed})
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def test_a_changed_weights_or_data_file_recomputes_a_stored_result(
    tmp_path, monkeypatch, capsys, single_thread
):
    """Through the runner's real path, the smoke profile with its tiny target saved as a local
    model folder: the same files again are reused; the weights file rewritten (other weights,
    same config) or the data file changed is recomputed, with one line naming the file; a
    result stored before inputs were fingerprinted is reused and said so. Planted and seen
    failing: `cached` not comparing the fingerprints (the old result reused)."""
    from specdec_lib.generate import Generator
    from specdec_study.runner.session import MODELS

    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls: list[int] = []
    real = Generator.generate_ids

    def generate_ids(self, ids, spec, sampling):
        calls.append(1)
        return real(self, ids, spec, sampling)

    monkeypatch.setattr(Generator, "generate_ids", generate_ids)
    data = tmp_path / "wiki.test.raw"
    data.write_bytes(inputs.BUNDLED_PATH.read_bytes())
    monkeypatch.setattr(inputs, "BUNDLED_PATH", data)  # what the fingerprint reads
    model = saved_tiny_model(tmp_path / "model", seed=0)

    def run() -> tuple[Any, int, str]:
        S = study.setup("smoke", results_dir=str(tmp_path / "r"), overrides={"n_prompts": 2})
        S.profile.update(target=str(model), dtype="float32")  # load_model: no float64
        calls.clear()
        capsys.readouterr()
        res = study.run(S, "baseline")
        return res, len(calls), capsys.readouterr().out

    first, n, _ = run()
    assert n > 0 and first.env["inputs"][f"target {model}"]["model.safetensors"]
    _, n, out = run()
    assert n == 0 and "same config and input files" in out

    MODELS.models.pop((str(model), "float32", "cpu"))  # the next load reads the new files
    saved_tiny_model(model, seed=1)
    again, n, out = run()
    assert n > 0 and f"target {model}: model.safetensors changed" in out
    assert again.config["config_hash"] == first.config["config_hash"]
    assert again.rows["tokens"].tolist() != first.rows["tokens"].tolist()  # other weights

    with data.open("a") as f:
        f.write("\n = Appended =\n")
    _, n, out = run()
    assert n > 0 and "data bundled: wiki.test.raw changed" in out

    env = again.path / "env.json"  # as every result measured before inputs were fingerprinted
    old = json.loads(env.read_text())
    old.pop("inputs")
    env.write_text(json.dumps(old))
    _, n, out = run()
    assert n == 0 and "before input files were fingerprinted" in out


def test_a_checkpoint_is_resumed_only_on_the_machine_that_wrote_it(
    tmp_path, monkeypatch, single_thread
):
    """Killed after a prompt on one CPU, rerun on another: nothing is resumed (the other
    machine's checkpoint is dropped, its prompt measured again); on the same machine it is
    resumed (tests/test_resume.py). Planted and seen failing: the machine left out of the
    checkpoint's name."""
    from specdec_lib.generate import Generator
    from specdec_study.runner import execute

    class Killed(Exception):
        pass

    real = Generator.generate_ids

    def counting(kill_at: int | None) -> list[int]:
        calls: list[int] = []

        def generate_ids(self, ids, spec, sampling):
            calls.append(1)
            if len(calls) == kill_at:
                raise Killed
            return real(self, ids, spec, sampling)

        monkeypatch.setattr(Generator, "generate_ids", generate_ids)
        return calls

    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 2})
    partials = tmp_path / "smoke"
    monkeypatch.setattr(execute, "cpu_model", lambda: "CPU A")
    counting(kill_at=2 + 2 + 1)  # warm-up (2 arms), prompt 0, then killed
    with pytest.raises(Killed):
        study.run(S, "bigram")
    (on_a,) = partials.glob(".bigram.partial-*.jsonl")

    monkeypatch.setattr(execute, "cpu_model", lambda: "CPU B")
    calls = counting(kill_at=None)
    result = study.run(S, "bigram")
    assert result.env["resumed_prompts"] == 0 and len(calls) == 2 + 2 * 2  # A's prompt redone
    assert not on_a.exists() and not list(partials.glob(".bigram.partial-*"))


def distilled_draft(folder: Path, weights: bytes, target: str = "embedded") -> Path:
    """A folder laid out as `drafters.distilled` saves one: weights, training record, marker."""
    from specdec_lib.drafters import distilled

    folder.mkdir(parents=True, exist_ok=True)
    (folder / distilled.WEIGHTS).write_bytes(weights)
    (folder / distilled.RECORD).write_text(json.dumps({"target": target, "wall_s": 1.0}))
    (folder / distilled.MARKER).write_text(json.dumps({"format": 1, "layers": [0, 1]}))
    return folder


def test_a_changed_distilled_draft_is_a_changed_input_and_leaves_the_config_hash_alone(
    tmp_path, monkeypatch, capsys
):
    """The distilled draft's folder is named by the target and the recipe, so a draft retrained
    (other bits on another machine) or replaced in place kept its name and its result was reused
    silently. Its weights and marker are now in env.json's `inputs`: the cached one found by its
    training record's target, `distilled:PATH` read from PATH; a changed weights file recomputes
    the stored result, one line naming it, and the config hash stays. Not trained yet, or several
    cached for one target: a note, never compared."""
    from specdec_lib.drafters import distilled
    from specdec_lib.models import embedded
    from specdec_study.results.store import publish
    from specdec_study.runner import execute

    cache = tmp_path / "cache"
    monkeypatch.setattr(embedded, "embedded_cache_dir", lambda: cache / "gemma-3-270m")
    recipe = distilled.recipe_hash(distilled.DEFAULT)
    config = {**whole_config("agreement", "smoke"), "target": "embedded",
              "data_source": "bundled", "arms": {"distilled": "distilled"}}  # fmt: skip
    label = "draft distilled"
    assert execute.inputs_now(config)[label] == (
        "not trained on this machine yet: not fingerprinted"
    )
    mine = distilled_draft(cache / f"distilled-aaaa-{recipe}", b"w" * 64)
    distilled_draft(cache / f"distilled-bbbb-{recipe}", b"o" * 64, target="other/model")
    distilled_draft(cache / "distilled-aaaa-0123456789", b"r" * 64)  # another recipe
    first = execute.inputs_now(config)
    assert set(first[label]) == {distilled.WEIGHTS, distilled.MARKER}  # what loading reads

    S = study.setup("smoke", results_dir=str(tmp_path / "r"))
    rows = [{"prompt": i, "method": "distilled", "wall_s": 0.1} for i in range(3)]
    summary = whole_summary("agreement", "smoke")
    publish(S.store, "agreement", config, {"inputs": first}, rows, summary)
    capsys.readouterr()
    assert execute.cached(S, "agreement", config) is not None
    assert "same config and input files" in capsys.readouterr().out

    inputs._MEMO.clear()
    (mine / distilled.WEIGHTS).write_bytes(b"v" * 64)  # retrained in place: same folder name
    now = execute.inputs_now(config)
    assert inputs.changed_input(first, now) == (
        f"{label}: {distilled.WEIGHTS} changed (another sha256)"
    )
    assert execute.cached(S, "agreement", config) is None
    assert f"{label}: {distilled.WEIGHTS} changed" in capsys.readouterr().out
    assert (
        config_hash(config)
        == json.loads((S.store.dir("agreement") / "config.json").read_text())["config_hash"]
    )  # the fingerprint lives in env.json, outside the hash

    distilled_draft(cache / f"distilled-cccc-{recipe}", b"x" * 64)  # a second one for embedded
    assert execute.inputs_now(config)[label].startswith("several cached distilled drafts")
    by_path = {**config, "arms": {"distilled": f"distilled:{mine}"}}
    assert set(execute.inputs_now(by_path)[f"draft distilled:{mine}"]) == set(first[label])
