"""Reliability: numerics that go wrong stop loudly, result directories survive SIGKILL and
concurrent writers, and prompts that do not fit the context window are refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import autoregressive_decode
from specdec_lib.errors import SpecdecError
from specdec_study.environment.secrets import scrub
from specdec_study.results.store import ResultStore, load_result, publish

ROOT = Path(__file__).resolve().parents[1]


class NaNModel(torch.nn.Module):
    """Returns NaN logits from the `bad_from`-th call on."""

    def __init__(self, vocab: int = 8, bad_from: int = 0, dtype=torch.float16):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1, dtype=dtype), requires_grad=False)
        self.vocab, self.bad_from, self.n = vocab, bad_from, 0

    def forward(self, input_ids, cache=None, use_cache=False, logits_to_keep=1):
        logits = torch.randn(1, input_ids.shape[1], self.vocab)
        if self.n >= self.bad_from:
            logits[..., 0] = float("nan")
        self.n += 1
        return SimpleNamespace(logits=logits)


@pytest.mark.parametrize(
    ("dtype", "fix"), [(torch.float16, "float32"), (torch.bfloat16, "float32")]
)
def test_nan_logits_stop_the_run_naming_dtype_and_fix(dtype, fix):
    lm = CachedLM(NaNModel(bad_from=2, dtype=dtype), use_cache=False)
    with pytest.raises(SpecdecError) as e:
        autoregressive_decode(lm, [1, 2, 3], max_new_tokens=8)
    msg = str(e.value)
    assert str(dtype).removeprefix("torch.") in msg and fix in msg
    assert "\n" not in msg


def test_infinite_logits_are_caught_too():
    class InfModel(NaNModel):
        def forward(self, input_ids, **kw):
            out = super().forward(input_ids, **kw)
            out.logits[..., 0] = float("inf")
            return out

    with pytest.raises(SpecdecError, match="NaN or infinite"):
        autoregressive_decode(CachedLM(InfModel(), use_cache=False), [1, 2], max_new_tokens=3)


def test_prompt_longer_than_the_context_window_is_refused(target64):
    from specdec_lib.generate import Generator

    loaded = SimpleNamespace(model=target64, tokenizer=None, vocab_size=target64.config.vocab_size)
    window = target64.config.max_position_embeddings
    gen = Generator(loaded, None, CachedLM(target64), ())  # type: ignore[arg-type]
    with pytest.raises(SpecdecError, match="context window"):
        gen.generate_ids([1] * (window - 3), SpecConfig(4, 8), SamplingConfig())
    assert len(gen.lm.tokens) == 0  # refused before any model call


def test_scrub_hides_secret_values_and_token_shapes(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz123456")
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567")
    data = {
        "a": "token hf_abcdefghijklmnopqrstuvwxyz123456 here",
        "b": ["0123456789abcdef0123456789abcdef01234567"],
        "c": "hf_SomethingElseThatLooksLikeAToken",
        "n": 3,
    }
    out = json.dumps(scrub(data))
    assert "abcdefghijklmnop" not in out and "0123456789abcdef" not in out
    assert "SomethingElse" not in out and '"n": 3' in out


# ---------------------------------------------------------------- result directories

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from specdec_study.results.store import ResultStore, publish

    root, names, hang = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
    store = ResultStore(root, "p")
    for name in names:
        cfg = {"experiment": name, "n": 1}
        if store.done(name, cfg):
            print("skip", name, flush=True)
            continue
        rows = [{"prompt": i, "method": "baseline", "wall_s": 0.1 * (i + 1)} for i in range(3)]

        def figures(d, name=name):
            (d / "x.png").write_bytes(b"png")
            if name == hang:
                print("hanging", name, flush=True)
                time.sleep(600)

        publish(store, name, cfg, {"env": 1}, rows, {"baseline": {"n_prompts": 3}}, figures)
        print("done", name, flush=True)
    """
)


def _writer(tmp_path: Path, names: str, hang: str = "") -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "res"), names, hang],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _all_parse(root: Path) -> list[str]:
    names = []
    for d in sorted((root / "p").iterdir()):
        if d.name.startswith("."):
            continue
        r = load_result(d)
        assert r.summary and r.config["config_hash"] and len(r.rows) == 3
        names.append(d.name)
    return names


def test_sigkill_mid_experiment_leaves_no_half_result_and_the_rerun_completes(tmp_path):
    proc = _writer(tmp_path, "a,b,c", hang="b")
    lines = []
    for line in proc.stdout:
        lines.append(line.split())
        if line.startswith("hanging"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    root = tmp_path / "res"
    assert _all_parse(root) == ["a"]  # b was being written: absent, not half-written
    a_mtime = (root / "p" / "a" / "summary.json").stat().st_mtime_ns

    rerun = _writer(tmp_path, "a,b,c")
    out, _ = rerun.communicate(timeout=120)
    assert rerun.returncode == 0
    assert "skip a" in out and "done b" in out and "done c" in out
    assert _all_parse(root) == ["a", "b", "c"]
    assert (root / "p" / "a" / "summary.json").stat().st_mtime_ns == a_mtime  # not recomputed
    leftovers = [p.name for p in (root / "p").iterdir() if p.name.startswith(".") and p.is_dir()]
    assert leftovers == []


def test_two_writers_at_once_do_not_corrupt_each_other(tmp_path):
    procs = [_writer(tmp_path, "x,y,z") for _ in range(2)]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    assert _all_parse(tmp_path / "res") == ["x", "y", "z"]


OVERLAP = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from specdec_study.results.store import ResultStore, publish

    root, role, sync = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])

    def wait_for(name, limit):
        end = time.monotonic() + limit
        while not (sync / name).exists() and time.monotonic() < end:
            time.sleep(0.01)
        return (sync / name).exists()

    store = ResultStore(root, "p")
    rows = [{"prompt": 0, "method": "baseline", "writer": role}]
    if role == "first":
        def figures(d):
            (sync / "inside").touch()  # the first writer is mid-publication
            assert wait_for("second_publishing", 60)
            # a second writer without the lock finishes now; with it, it waits for us
            print("overlap", wait_for("second_done", 3), flush=True)
    else:
        figures = None
        assert wait_for("inside", 60)
        (sync / "second_publishing").touch()
    publish(store, "e", {"n": 1}, {"env": 1}, rows, {"baseline": {"n_prompts": 1}}, figures)
    if role == "second":
        (sync / "second_done").touch()
    print("done", role, flush=True)
    """
)


def test_a_writer_waits_while_another_is_mid_publication(tmp_path):
    """Two writers of one experiment, the second started while the first is inside `publish`
    (held there until the second has called `publish` too): the second finishes only after the
    first, both succeed, and the directory holds one whole result (the later writer's).

    Planted bug it catches: `ResultStore.writing` without its lock (the second writer clears
    the first's temporary directory as stale and publishes under it; the first then fails)."""
    script = tmp_path / "overlap.py"
    script.write_text(OVERLAP)
    sync = tmp_path / "sync"
    sync.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "res"), role, str(sync)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for role in ("first", "second")
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert "overlap False" in outs[0]  # the second was still waiting when the first finished
    r = load_result(tmp_path / "res" / "p" / "e")
    assert list(r.rows["writer"]) == ["second"]
    assert [p.name for p in (tmp_path / "res" / "p").iterdir() if p.is_dir()] == ["e"]


def _refuse_constant(c: str):
    raise AssertionError(f"non-strict JSON constant {c}")


def test_published_json_is_strict_and_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecretsecret1234")
    store = ResultStore(tmp_path, "p")
    rows = [{"prompt": 0, "method": "baseline", "note": "hf_secretsecretsecret1234"}]
    d = publish(
        store,
        "e",
        {"k": float("nan")},
        {"t": "hf_secretsecretsecret1234"},
        rows,
        {"v": float("inf")},
    )
    for f in d.iterdir():
        text = f.read_text()
        assert "secretsecret" not in text
        if f.suffix == ".json":
            json.loads(text, parse_constant=_refuse_constant)


def test_unknown_profile_is_a_one_line_specdec_error():
    from specdec_study.study import load_profile

    with pytest.raises(SpecdecError, match="no profile 'nope': known profiles are"):
        load_profile("nope")


def test_unknown_experiment_is_a_one_line_specdec_error():
    from specdec_study.study import setup

    S = setup("smoke")
    with pytest.raises(SpecdecError, match="unknown experiment 'nope' for profile 'smoke'; known:"):
        S.exp("nope")
