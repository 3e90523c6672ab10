"""Running methods over prompts, paired and interleaved, and writing result files atomically.

An experiment is a config (plain data) -> rows (one per prompt x method) -> a summary. Every
method runs on the same prompts in the same process; per prompt the methods run back to back in
an order that rotates with the prompt index, after a warm-up, so drift in the machine's speed
hits all methods alike. Results land in `<results>/<profile>/<experiment>/`:

    config.json     the experiment's config and its hash
    env.json        versions, hardware, dtype, git commit
    per_prompt.csv  one row per prompt and method
    summary.json    medians with bootstrap 95% CIs (n and method beside each), paired speedups,
                    pooled acceptance
    figures/        whatever the notebook drew

The directory is built under a temporary name and renamed into place, so it is complete or
absent, never half-written; a per-experiment lock keeps two batches from writing it at once, and
an existing result with the same config hash is reused unless forced, and only when it passes
`schema.result_problem` (a damaged directory is recomputed and never read back). Knows nothing
about notebooks.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock
from tqdm.auto import tqdm

from specdec_lib import theory
from specdec_lib.analysis import stats
from specdec_lib.cache import check_finite
from specdec_lib.config import SamplingConfig, SpecConfig, config_hash
from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator
from specdec_lib.metrics import first_divergence, repeated_ngram_share
from specdec_lib.schema import result_problem
from specdec_lib.tracking import scrub

BASELINE = "baseline"


@dataclass(frozen=True)
class Method:
    """One arm of an experiment: a drafter spec and its K. The baseline is draft='none'."""

    name: str
    draft: str = "none"
    k: int = 4
    use_cache: bool = True


@dataclass
class Arm:
    method: Method
    generator: Generator


@dataclass
class PromptRef:
    """What a row records of its prompt: ids plus where they came from."""

    ids: tuple[int, ...]
    article: int = -1
    anchor: int = -1
    context_tokens: int = -1


def as_prompt_ref(p: Any) -> PromptRef:
    if isinstance(p, PromptRef):
        return p
    if hasattr(p, "ids"):
        return PromptRef(tuple(p.ids), p.article, p.anchor, p.context_tokens)
    return PromptRef(tuple(p))


def top2_margin(arm: Arm, ids: Sequence[int]) -> float:
    """The target's top-1 minus top-2 logit for the token after ids (uncached, one pass)."""
    model = arm.generator.target.model
    device = arm.generator.lm.device
    with torch.inference_mode():
        logits = (
            model(
                input_ids=torch.tensor([list(ids)], device=device),
                use_cache=False,
                logits_to_keep=1,
            )
            .logits[0, -1]
            .float()
        )
    check_finite(logits[None], arm.generator.lm.dtype)  # NaN would make a margin of nan, silently
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


def run_paired(
    arms: Sequence[Arm],
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    warmup: int = 1,
    progress: str | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    done: dict[int, list[dict[str, Any]]] | None = None,
    on_prompt: Callable[[int, Sequence[int], list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows for every prompt x arm. arms[0] is the reference (baseline) for token identity.

    `done` maps a prompt index to its rows from an earlier, interrupted run (a `Checkpoint`):
    those prompts are not run again; `on_prompt(i, ids, rows)` gets each prompt's rows once all
    arms ran it (to checkpoint them)."""
    refs = [as_prompt_ref(p) for p in prompts]
    done = done or {}
    if len(done) >= len(refs):
        warmup = 0  # nothing left to run
    for ref in refs[:warmup]:  # warm-up: caches, allocator, lazy init; not recorded
        for arm in arms:
            arm.generator.generate_ids(
                list(ref.ids), SpecConfig(arm.method.k, min(8, max_new_tokens)), sampling
            )
    rows: list[dict[str, Any]] = []
    for i, ref in enumerate(tqdm(refs, desc=progress or "prompts", disable=progress is None)):
        if i in done:
            rows.extend(done[i])
            continue
        first_row = len(rows)
        order = [arms[(j + i) % len(arms)] for j in range(len(arms))]
        outs = {}
        for arm in order:
            spec = SpecConfig(arm.method.k, max_new_tokens)
            outs[arm.method.name] = arm.generator.generate_ids(list(ref.ids), spec, sampling)
        base = outs[arms[0].method.name]
        for arm in arms:
            gen = outs[arm.method.name]
            st = gen.stats
            div = first_divergence(base.tokens, gen.tokens)
            margin = (
                top2_margin(arm, list(ref.ids) + base.tokens[:div])
                if div is not None and div < len(base.tokens)
                else None
            )
            row = {
                "prompt": i,
                "article": ref.article,
                "anchor": ref.anchor,
                "context_tokens": ref.context_tokens,
                "prompt_tokens": len(ref.ids),
                "method": arm.method.name,
                "draft": arm.method.draft,
                "k": arm.method.k if arm.method.draft != "none" else 0,
                "use_cache": arm.method.use_cache,
                "new_tokens": st.new_tokens,
                "wall_s": st.wall_s,
                "tokens_per_s": st.new_tokens / st.wall_s if st.wall_s > 0 else float("nan"),
                "target_calls": st.target_calls,
                "proposed": st.proposed,
                "accepted": st.accepted,
                "acceptance_rate": st.acceptance_rate,
                "mean_accepted_length": st.mean_accepted_length,
                "draft_s": st.draft_s,
                "verify_s": st.verify_s,
                "prefill_s": st.prefill_s,
                "stopped_by": st.stopped_by,
                "identical": div is None,
                "divergence_pos": div,
                "divergence_margin": margin,
                "repetition_4gram": repeated_ngram_share(gen.tokens, 4, ref.ids),
                "accepted_lengths": " ".join(map(str, st.accepted_lengths)),
                "proposed_lengths": " ".join(map(str, st.proposed_lengths)),
                "tokens": " ".join(map(str, gen.tokens)),
            }
            rows.append(row)
            if on_row is not None:
                on_row(row)
        if on_prompt is not None:
            on_prompt(i, ref.ids, rows[first_row:])
    return rows


def _lengths(rows: Sequence[dict[str, Any]], key: str) -> list[list[int]]:
    return [[int(x) for x in str(r[key]).split()] for r in rows]


def pooled_position_acceptance(rows: Sequence[dict[str, Any]], k: int) -> list[float | None]:
    reached, took = np.zeros(k), np.zeros(k)
    for acc, prop in zip(
        _lengths(rows, "accepted_lengths"), _lengths(rows, "proposed_lengths"), strict=True
    ):
        for n, d in zip(acc, prop, strict=True):
            m = min(d, n + 1, k)
            reached[:m] += 1
            took[: min(n, m)] += 1
    return [float(t / r) if r else None for t, r in zip(took, reached, strict=True)]


def pooled_histogram(rows: Sequence[dict[str, Any]], k: int) -> list[int]:
    hist = np.zeros(k + 1, dtype=int)
    for acc, prop in zip(
        _lengths(rows, "accepted_lengths"), _lengths(rows, "proposed_lengths"), strict=True
    ):
        for n, d in zip(acc, prop, strict=True):
            if d:
                hist[min(n, k)] += 1
    return hist.tolist()


def ci_dict(values: Sequence[float]) -> dict[str, Any]:
    """The median over prompts with its bootstrap interval, n and method."""
    return stats.median(values).as_dict("median")


def _ratio_ci(num: np.ndarray, den: np.ndarray) -> dict[str, Any]:
    """Pooled ratio sum(num)/sum(den) with a paired bootstrap interval over prompts."""
    if den.sum() == 0:
        return stats.Interval(math.nan, math.nan, math.nan, int(num.size), "none").as_dict()
    return stats.pooled_ratio(num, den).as_dict()


def summarize(rows: Sequence[dict[str, Any]], baseline: str = BASELINE) -> dict[str, Any]:
    """Per method: medians with CIs, paired speedup, pooled acceptance, predicted speedup."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {
        m: sorted((r for r in rows if r["method"] == m), key=lambda r: r["prompt"]) for m in methods
    }
    base = by.get(baseline)
    out: dict[str, Any] = {}
    for m, rs in by.items():
        wall = np.array([r["wall_s"] for r in rs])
        tokens = np.array([r["new_tokens"] for r in rs], dtype=float)
        k = max((r["k"] for r in rs), default=0)
        s: dict[str, Any] = {
            "n_prompts": len(rs),
            "draft": rs[0]["draft"],
            "k": k,
            "tokens_per_s": ci_dict([r["tokens_per_s"] for r in rs]),
            "wall_s": ci_dict(wall.tolist()),
            "total_wall_s": float(wall.sum()),
            "new_tokens": float(tokens.sum()),
            "identical_fraction": float(np.mean([bool(r["identical"]) for r in rs])),
            "repetition_4gram": ci_dict([r["repetition_4gram"] for r in rs]),
        }
        if k:
            prop = np.array([r["proposed"] for r in rs], dtype=float)
            acc = np.array([r["accepted"] for r in rs], dtype=float)
            calls = np.array([len(str(r["accepted_lengths"]).split()) for r in rs], dtype=float)
            s["acceptance_rate"] = _ratio_ci(acc, prop)
            s["mean_accepted_length"] = _ratio_ci(acc + calls, calls)
            s["position_acceptance"] = pooled_position_acceptance(rs, k)
            s["accepted_histogram"] = pooled_histogram(rs, k)
            draft_s = np.array([r["draft_s"] for r in rs])
            verify_s = np.array([r["verify_s"] for r in rs])
            s["draft_share_of_time"] = float(draft_s.sum() / wall.sum()) if wall.sum() else None
            s["draft_s_per_token"] = float(draft_s.sum() / prop.sum()) if prop.sum() else None
            s["verify_s_per_call"] = float(verify_s.sum() / calls.sum()) if calls.sum() else None
        if base is not None and m != baseline and len(base) == len(rs):
            b_wall = np.array([r["wall_s"] for r in base])
            s["speedup"] = stats.paired_speedup(b_wall, wall).as_dict()
            s["speedup_per_prompt"] = ci_dict((b_wall / wall).tolist())
            b_tokens = np.array([r["new_tokens"] for r in base], dtype=float)
            step_s = float(b_wall.sum() / b_tokens.sum()) if b_tokens.sum() else None
            s["baseline_s_per_token"] = step_s
            if k and step_s and s.get("draft_s_per_token") is not None:
                c = s["draft_s_per_token"] / step_s
                a = s["acceptance_rate"]["value"]
                mal = s["mean_accepted_length"]["value"]
                a_iid = theory.acceptance_from_rate(min(max(mal, 1.0), k + 1.0), k)
                s["cost_ratio"] = c
                s["per_token_acceptance_iid"] = a_iid
                s["predicted_speedup_leviathan"] = theory.expected_speedup(a_iid, k, c)
                # calibrated: the measured verify cost instead of "one call = one step"
                v = s["verify_s_per_call"] / step_s
                s["verify_cost_ratio"] = v
                s["predicted_speedup_calibrated"] = mal / (k * c + v)
                s["acceptance_rate_pooled"] = a
        out[m] = s
    return out


@dataclass
class ResultStore:
    """`<root>/<profile>/<experiment>/` with atomic publication and per-experiment locks."""

    root: Path
    profile: str

    def dir(self, experiment: str) -> Path:
        return Path(self.root) / self.profile / experiment

    def problem(self, experiment: str, *, study: bool = False) -> str | None:
        """Why the stored result cannot be reused (None when it is whole): schema.result_problem."""
        return result_problem(self.dir(experiment), study=study)

    def done(self, experiment: str, config: dict[str, Any], *, study: bool = False) -> bool:
        """Whether a whole result for this exact config is stored."""
        d = self.dir(experiment)
        if self.problem(experiment, study=study) is not None:
            return False
        saved = json.loads((d / "config.json").read_text(encoding="utf-8"))
        return saved.get("config_hash") == config_hash(config)

    @contextlib.contextmanager
    def writing(self, experiment: str) -> Iterator[Path]:
        """A temporary directory that becomes the experiment's directory on success."""
        final = self.dir(experiment)
        with self.lock(experiment):
            for stale in final.parent.glob(f".{experiment}.*"):  # left by a killed writer
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{experiment}.", dir=final.parent))
            try:
                yield tmp
                old = final.parent / f".{experiment}.old.{os.getpid()}"
                if final.exists():
                    final.rename(old)
                tmp.rename(final)
                shutil.rmtree(old, ignore_errors=True)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def lock(self, experiment: str) -> FileLock:
        """The experiment's inter-process lock; one object per path, so it is reentrant within
        a process (hold it around check-compute-publish; `writing` takes it again)."""
        d = self.dir(experiment)
        d.parent.mkdir(parents=True, exist_ok=True)
        path = str((d.parent / f".{experiment}.lock").resolve())
        if path not in _LOCKS:
            _LOCKS[path] = FileLock(path)
        return _LOCKS[path]


_LOCKS: dict[str, FileLock] = {}


class Checkpoint:
    """Per-prompt rows of an experiment in progress, so that a rerun after a crash or a lost
    Colab runtime skips every prompt already finished: one JSON line per (segment, prompt),
    appended, flushed and fsynced as soon as all arms ran the prompt, in
    `<results>/<profile>/.<experiment>.partial-<config hash>.jsonl`. A segment names one call of
    the paired runner (e.g. "context_sweep context 50"); a line only counts for the same prompt
    ids. A torn last line (killed mid-write) is ignored. The file is removed once the experiment
    is published; another config's file is removed when this one starts."""

    def __init__(self, store: ResultStore, experiment: str, config: dict[str, Any], fresh: bool):
        directory = store.dir(experiment).parent
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f".{experiment}.partial-{config_hash(config)}.jsonl"
        for other in directory.glob(f".{experiment}.partial-*.jsonl"):
            if other != self.path or fresh:
                other.unlink(missing_ok=True)
        self._rows: dict[tuple[str, int], tuple[str, list[dict[str, Any]]]] = {}
        self.resumed = 0  # prompts taken from the file by this process
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self._rows[(rec["segment"], int(rec["prompt"]))] = (rec["ids"], rec["rows"])
                except (ValueError, KeyError, TypeError):
                    continue

    @staticmethod
    def _ids_key(ids: Sequence[int]) -> str:
        return config_hash({"ids": [int(t) for t in ids]})

    def done(self, segment: str, prompts: Sequence[Any]) -> dict[int, list[dict[str, Any]]]:
        out = {}
        for i, p in enumerate(prompts):
            hit = self._rows.get((segment, i))
            if hit is not None and hit[0] == self._ids_key(as_prompt_ref(p).ids):
                out[i] = [dict(r) for r in hit[1]]
        self.resumed += len(out)
        return out

    def add(self, segment: str, i: int, ids: Sequence[int], rows: list[dict[str, Any]]) -> None:
        rec = {"segment": segment, "prompt": i, "ids": self._ids_key(ids), "rows": scrub(rows)}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(o: Any) -> Any:
    """NaN/inf -> None so the files are strict JSON."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def write_json(path: Path, data: Any) -> None:
    """Strict JSON, secrets scrubbed, written to a temp file and renamed into place."""
    text = json.dumps(_clean(scrub(data)), indent=2, sort_keys=True, default=_json_default)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in scrub(dict(r)).items()})
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class ExperimentResult:
    config: dict[str, Any]
    env: dict[str, Any]
    summary: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def publish(
    store: ResultStore,
    experiment: str,
    config: dict[str, Any],
    env: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    figures: Callable[[Path], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write every file of an experiment at once (atomically); returns its directory."""
    with store.writing(experiment) as tmp:
        write_json(tmp / "config.json", {**config, "config_hash": config_hash(config)})
        write_json(tmp / "env.json", env)
        write_rows(tmp / "per_prompt.csv", rows)
        write_json(tmp / "summary.json", summary)
        for name, data in (extra or {}).items():
            if name.endswith(".csv"):
                write_rows(tmp / name, data)
            else:
                write_json(tmp / name, data)
        if figures is not None:
            (tmp / "figures").mkdir()
            figures(tmp / "figures")
    return store.dir(experiment)


def load_result(path: Path) -> ExperimentResult:
    """Read an experiment directory back (the book and tests use this); a damaged one is a
    one-line SpecdecError, never a partial result."""
    path = Path(path)
    problem = result_problem(path)
    if problem is not None:
        raise SpecdecError(
            f"result {path} is damaged ({problem}): rerun its notebook (or make evaluate) to "
            "recompute it"
        )
    with open(path / "per_prompt.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return ExperimentResult(
        config=json.loads((path / "config.json").read_text()),
        env=json.loads((path / "env.json").read_text()),
        summary=json.loads((path / "summary.json").read_text()),
        rows=rows,
    )


def teacher_forced_agreement(
    target_model: torch.nn.Module,
    predict: Callable[[list[int]], list[int]],
    prefix: Sequence[int],
    continuation: Sequence[int],
) -> float:
    """Share of continuation positions where the draft's next-token guess equals the target's
    argmax, both seeing prefix + continuation[:t] (no timing, no sampling, one pass each).

    predict(ids) returns the draft's guess after every prefix of ids (like argmax of logits).
    """
    ids = list(prefix) + list(continuation)
    device = next(target_model.parameters()).device
    with torch.inference_mode():
        logits = target_model(input_ids=torch.tensor([ids], device=device), use_cache=False).logits[
            0
        ]
    start = len(prefix) - 1  # position predicting continuation[0]
    target_next = logits[start : len(ids) - 1].argmax(-1).tolist()
    draft_next = predict(ids)[start : len(ids) - 1]
    agree = sum(int(a == b) for a, b in zip(target_next, draft_next, strict=True))
    return agree / len(target_next) if target_next else float("nan")
