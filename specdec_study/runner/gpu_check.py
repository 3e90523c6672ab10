"""`make gpu-check`: the smoke-pair study on CUDA, checked, in a few minutes, with a JSON report.

What it checks (each a pass/fail line and an entry of the report):
- identity: every experiment of the `smoke-pair` profile (tiny Gemma3ForConditionalGeneration
  target with 64 ids more than its tiny Gemma3ForCausalLM draft, float64) runs on the GPU, and
  every greedy arm of ours is token-identical to the paired baseline; Hugging Face greedy too.
- sampling: T = 1 over many seeds with the narrower draft, through ids the draft cannot embed
  (a device-side assert would kill the process), every token inside the target's vocabulary.
- timing: `decode.device_sync` makes a wall-clock interval cover queued GPU work: a workload
  timed with perf_counter around device_sync is at least 90% of its CUDA-event time.
- memory: the peak allocated during the experiments and what is left allocated after the models'
  caches are dropped (no cache survives a generation's reset).
- real_shapes: Gemma 3 4B and 1B built from their configs with random weights (no download), per
  dtype (bfloat16, float16, float32; one that does not fit or run is skipped with one line): the
  pair's memory, a decode step and a K + 1 verification of each, and c (`real_shapes`). Random
  weights say nothing about acceptance: identity and sampling stay on the tiny pair.
Without a CUDA device it prints one line saying it skipped, writes a report saying so (with the
real pair's parameter counts and weight bytes, computed from the configs), and exits 0.

    python -m specdec_study.runner.gpu_check [--out results/gpu-check/report.json]
        [--device cuda]

Knows nothing about the book. Never reads a secret.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from specdec_lib import ROOT
from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.decode import device_sync
from specdec_lib.errors import SpecdecError
from specdec_study.runner import real_shapes
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import MODELS, Session, get_drafter, load_target, setup

PROFILE = "smoke-pair"
DEFAULT_OUT = ROOT / "results" / "gpu-check" / "report.json"
GREEDY = ("baseline", "bigram", "transformer_draft", "context_sweep", "context_sweep_nocache",
          "k_sweep", "peers", "implementations")  # fmt: skip


def _arms(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = dict(summary.get("arms", {}))
    for key in ("by_context", "by_temperature"):
        for cell, v in summary.get(key, {}).items():
            out.update({f"{cell}/{m}": s for m, s in v["arms"].items()})
    return out


def check_identity(study_run: Session) -> dict[str, Any]:
    """Run every experiment on the device; greedy arms of ours must equal the baseline."""
    results = {}
    runs = [
        RUNNERS["baseline"].run,
        RUNNERS["bigram"].run,
        RUNNERS["transformer_draft"].run,
        RUNNERS["context_sweep"].run,
        RUNNERS["context_sweep_nocache"].run,
        RUNNERS["agreement"].run,
        RUNNERS["k_sweep"].run,
        RUNNERS["sampling"].run,
        RUNNERS["peers"].run,
        RUNNERS["implementations"].run,
    ]
    for run in runs:
        res = run(study_run)
        results[res.summary["experiment"]] = res
    not_identical = {}
    for exp in GREEDY:
        for name, arm in _arms(results[exp].summary).items():
            if arm["draft"].startswith("hf:") and arm["draft"] != "hf:greedy":
                continue  # HF's assisted and lookup modes are measured, not required identical
            if arm["identical_fraction"] != 1.0:
                not_identical[f"{exp}/{name}"] = arm["identical_fraction"]
    ident = results["transformer_draft"].summary.get("identity_by_dtype", {})
    return {
        "ok": not not_identical,
        "experiments": sorted(results),
        "not_identical": not_identical,
        "identity_by_dtype": {k: v.get("identical_fraction") for k, v in ident.items()},
        "device": results["baseline"].env.get("device"),
        "bf16_native": results["baseline"].env.get("bf16_native"),
        "gpu_capability": results["baseline"].env.get("gpu_capability"),
    }


def check_sampling(study_run: Session, seeds: int = 50) -> dict[str, Any]:
    """T = 1 with the narrower draft over many seeds: no crash, ids inside the vocabulary."""
    from specdec_lib.generate import Generator

    loaded = load_target(study_run)
    drafter = get_drafter(study_run, loaded, study_run.profile["drafts"]["transformer"])
    gen = Generator.from_loaded(loaded, drafter)
    prompts = prompts_for(study_run, loaded, 4, 20)
    limit = drafter.embed_limit or loaded.vocab_size
    unembeddable, tokens = 0, 0
    for seed in range(seeds):
        ids = list(prompts[seed % len(prompts)].ids)
        out = gen.generate_ids(ids, SpecConfig(4, 24), SamplingConfig(temperature=1.0, seed=seed))
        if not all(0 <= t < loaded.vocab_size for t in out.tokens):
            raise SpecdecError(f"seed {seed}: a token outside the vocabulary: {out.tokens}")
        tokens += len(out.tokens)
        unembeddable += sum(t >= limit for t in out.tokens)
    return {"ok": True, "seeds": seeds, "tokens": tokens, "unembeddable_emitted": unembeddable}


def check_timing(device: torch.device, reps: int = 5) -> dict[str, Any]:
    """perf_counter around device_sync covers the GPU work that CUDA events time."""
    if device.type != "cuda":
        return {"ok": None, "note": "no CUDA events on this device"}
    a = torch.randn(4096, 4096, device=device)
    ratios = []
    for _ in range(reps):
        device_sync(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(20):
            a = torch.tanh(a @ a)
        end.record()
        device_sync(device)
        wall = time.perf_counter() - t0
        ratios.append(wall / (start.elapsed_time(end) / 1000))
    return {"ok": min(ratios) >= 0.9, "wall_over_event": ratios, "n": reps}


def check_memory(device: torch.device, before: int) -> dict[str, Any]:
    """Whether what stays allocated once the drafters are dropped is about the models' weights."""
    if device.type != "cuda":
        return {"ok": None, "note": "CUDA memory statistics only"}
    MODELS.drop_drafters()
    models_bytes = sum(
        sum(p.numel() * p.element_size() for p in m.model.parameters())
        for m in MODELS.models.values()
    )
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    left = torch.cuda.memory_allocated(device) - before
    # with the drafters (and their caches) dropped, what stays is the models' weights
    return {
        "ok": left <= models_bytes * 1.5 + (64 << 20),
        "peak_allocated_bytes": peak,
        "allocated_after_bytes": left,
        "model_weight_bytes": models_bytes,
    }


def _costs_line(r: dict[str, Any]) -> str:
    """One dtype of the real-shapes check in a line: its target costs and c, or why skipped."""
    if "skipped" in r:
        return f"skipped: {r['skipped']}"
    return (
        f"decode step {1000 * r['target_step_s']:.1f} ms, K + 1 verification "
        f"{1000 * r['target_verify_s']:.1f} ms, c = {r['c']:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    """The `gpu-check` CLI: run the checks, write the JSON report; 0: passed or skipped."""
    ap = argparse.ArgumentParser(
        prog="python -m specdec_study.runner.gpu_check", description=__doc__
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--device", default="cuda", help="cuda (the check); cpu only to try it out")
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: SKIPPED: no CUDA device is visible here (run it on a GPU machine)")
        report = {
            "status": "skipped",
            "reason": "no CUDA device",
            "torch": torch.__version__,
            "real_pair": real_shapes.real_pair(),  # whether the pair fits a GPU, from the configs
        }
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        return 0
    device = torch.device(args.device)
    t0 = time.perf_counter()
    before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    report: dict[str, Any] = {
        "profile": PROFILE,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }
    try:
        with tempfile.TemporaryDirectory(prefix="specdec-gpu-check-") as tmp:
            study_run = setup(PROFILE, results_dir=tmp, force=True)
            study_run.profile["device"] = args.device
            checks = {
                "identity": check_identity(study_run),
                "sampling": check_sampling(study_run),
                "timing": check_timing(device),
                "memory": check_memory(device, before),
            }
        # after the memory check: it resets the peak statistics for each dtype
        scale = 1 if device.type == "cuda" else real_shapes.CPU_SCALE
        checks["real_shapes"] = real_shapes.measure(device, scale=scale)
    except SpecdecError as exc:
        print(f"gpu-check: FAILED: {exc}")
        args.out.write_text(json.dumps({**report, "status": "failed", "error": str(exc)}) + "\n")
        return 2
    report["checks"] = checks
    report["wall_s"] = time.perf_counter() - t0
    failed = [name for name, c in checks.items() if c["ok"] is False]
    report["status"] = "failed" if failed else "passed"
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for name, c in checks.items():
        verdict = {True: "ok", False: "FAILED", None: "n/a"}[c["ok"]]
        print(f"gpu-check {name}: {verdict}")
    for dtype, r in checks["real_shapes"]["by_dtype"].items():
        print(f"gpu-check real_shapes {dtype}: {_costs_line(r)}")
    print(f"gpu-check: {report['status']} in {report['wall_s']:.0f} s; report: {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
