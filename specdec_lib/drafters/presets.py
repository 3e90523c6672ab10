"""The presets `best` and `best_short` chosen for the machine: which lossless configuration a
short calibration measured fastest on this CPU kind and dtype, cached per machine, dtype and
target, and the static table (`registry.PRESETS`) as the fallback where no calibration exists.

Who resolves how:
- `generate --draft best` and the bench resolve a preset here (`resolve`): the calibrated
  configuration when the cache holds one for this machine, dtype and target, else the static
  table, and they say which (`Resolution.line`).
- The study does not: `registry.parse` maps a preset to the static table only, so a study
  config that names a preset (the agreement experiment's `continuation_by: best`) is the same
  on every machine and keeps its config hash (tests/test_config_hash.py).

The cache is one JSON file, `$SPECDEC_CACHE/presets.json` (default `~/.cache/specdec/`;
`$SPECDEC_PRESETS` names another file), that maps a key to a calibration record
(`bench.calibrate_presets` writes it; `python -m specdec_lib calibrate` runs it). The key is
`machine_key(...)|dtype|target`: for a CPU, its vendor, family and model numbers, its
/proc/cpuinfo model name and the precision flags that change which kernels run (AMX,
AVX512-BF16, AVX512F, AVX2), so two virtual machines of one CPU model that expose different
flags are two kinds; for a GPU, its name. A file that does not parse, or a record without a
usable choice, is refused in one line naming the file.

The rule that picks (`choose`), fixed before any number: among the candidates whose every
output equals the baseline's token for token on the calibration prompts, the one with the
largest speedup, the baseline's total time over the candidate's on the same prompts (paired,
interleaved); a tie goes to the earlier candidate in `CANDIDATES`. The static table's
configuration for the preset (the incumbent, itself a candidate) is displaced only by a
candidate at least `MARGIN` faster than it: a challenger's speedup at least (1 + MARGIN) times
the incumbent's takes the preset, anything less keeps the incumbent (where the incumbent is
lossless; where it is not, or was not measured, the fastest lossless candidate). With no
lossless candidate there is no choice and the static table applies.

Why a margin: at one prompt per preset, one candidate's speedup moves by several percent
between two calibrations on one machine, so candidates a few percent apart traded places from
run to run (`best` flipped between the n-gram and lookup+shared; the numbers are in the issue's
session notes). A challenger inside the margin is not told apart from the incumbent by this
calibration; the bench, at ten prompts, measures whichever runs.

Torch-free. Knows nothing about timing or models: the rows it chooses from are given.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdec_lib.drafters.registry import PRESETS, parse
from specdec_lib.errors import SpecdecError

CACHE_FILE = "presets.json"
CACHE_VERSION = 1
# the precision flags that decide which kernels a CPU runs (listed in this order in a key)
PRECISION_FLAGS = ("amx_bf16", "amx_int8", "avx512_bf16", "avx512f", "avx2")
BASELINE_ARM = "baseline"  # the baseline arm's name in a calibration's rows (`results.catalog`)
MARGIN = 0.10  # how much faster than the static table's configuration a challenger must be


@dataclass(frozen=True)
class Candidate:
    """A configuration a preset may resolve to: a drafter spec and its K."""

    spec: str
    k: int
    cpu_only: bool = False  # its kernel runs on the CPU only (int8w)

    @property
    def name(self) -> str:
        """The arm's name in a calibration: spec@K."""
        return f"{self.spec}@{self.k}"


# Both groups draw from the same candidates: the n-gram at the K whose verification fills one row
# chunk of the fast path, the weight-only int8 copy of the target, prompt lookup with the
# shared-body fallback, and the shared-body draft alone.
CANDIDATES: tuple[Candidate, ...] = (
    Candidate("ngram", 7),
    Candidate("int8w:32768", 4, cpu_only=True),
    Candidate("lookup+shared:3:2", 4),
    Candidate("shared", 4),
)
# preset -> new tokens per calibration prompt (the bench's long and short groups)
PRESET_TOKENS = {"best": 128, "best_short": 32}


@dataclass(frozen=True)
class Resolution:
    """What a preset resolved to, and from what."""

    preset: str
    spec: str
    k: int | None
    source: str  # "calibration" | "fallback"
    why: str  # the calibration's numbers, or why the static table applies
    key: str
    calibration: dict[str, Any] | None = None  # the preset's calibration record, if any

    def line(self) -> str:
        """One line: the preset, the configuration it runs and where that came from."""
        k = f", K = {self.k}" if self.k is not None else ""
        return f"{self.preset} -> {self.spec}{k} ({self.source}: {self.why})"

    def as_dict(self) -> dict[str, Any]:
        """For a JSON line."""
        return {
            "preset": self.preset,
            "draft": self.spec,
            "k": self.k,
            "source": self.source,
            "why": self.why,
            "key": self.key,
            "calibration": self.calibration,
        }


# ------------------------------------------------------------------------------- the machine


def _cpuinfo(text: str | None = None) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        name, _, value = line.partition(":")
        out.setdefault(name.strip(), value.strip())
    return out


def cpu_kind(cpuinfo: str | None = None) -> dict[str, Any]:
    """This CPU's kind, machine-readable: vendor, family and model numbers, model name, the
    precision flags it exposes and the core count (`cpuinfo`: the text of /proc/cpuinfo, for
    tests; elsewhere than Linux only the platform's processor name)."""
    info = _cpuinfo(cpuinfo)
    flags = set(info.get("flags", "").split())

    def number(field: str) -> int | None:
        v = info.get(field, "")
        return int(v) if v.isdigit() else None

    return {
        "vendor": info.get("vendor_id") or None,
        "family": number("cpu family"),
        "model": number("model"),
        "model_name": info.get("model name") or platform.processor() or platform.machine(),
        "flags": [f for f in PRECISION_FLAGS if f in flags],
        "cores": os.cpu_count() if cpuinfo is None else None,
    }


def cpu_words(kind: dict[str, Any]) -> str:
    """A CPU kind in words: 'GenuineIntel family 6 model 207 (Intel(R) Xeon(R) Processor),
    avx512_bf16 avx512f avx2'."""
    where = " ".join(
        str(x)
        for x in (
            kind.get("vendor"),
            f"family {kind['family']}" if kind.get("family") is not None else None,
            f"model {kind['model']}" if kind.get("model") is not None else None,
        )
        if x
    )
    name = kind.get("model_name") or "unknown CPU"
    flags = " ".join(kind.get("flags") or []) or "no AVX2"
    return f"{where} ({name}), {flags}" if where else f"{name}, {flags}"


def machine_key(device_type: str, gpu_name: str | None = None, cpuinfo: str | None = None) -> str:
    """The machine part of a cache key: `cpu:<cpu_words>` or `cuda:<GPU name>`."""
    if device_type == "cuda":
        return f"cuda:{gpu_name or 'unknown GPU'}"
    return f"cpu:{cpu_words(cpu_kind(cpuinfo))}"


def cache_key(machine: str, dtype: str, target: str) -> str:
    """The cache's key: machine, dtype and target, '|'-separated."""
    return f"{machine}|{dtype}|{target}"


# ------------------------------------------------------------------------------------ the cache


def cache_path() -> Path:
    """$SPECDEC_PRESETS, else $SPECDEC_CACHE/presets.json, default ~/.cache/specdec/presets.json
    (beside the embedded model's cache)."""
    if own := os.environ.get("SPECDEC_PRESETS"):
        return Path(own).expanduser()
    root = os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec"
    return Path(root).expanduser() / CACHE_FILE


def _broken(path: Path, why: str) -> SpecdecError:
    return SpecdecError(
        f"the preset calibration cache {str(path)!r} is unusable ({why}): delete it or run "
        "`python -m specdec_lib calibrate` to rewrite it"
    )


def read_cache(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """key -> calibration record; {} when there is no file; a SpecdecError (one line) when the
    file does not parse or a record holds no usable choice."""
    path = path or cache_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise _broken(path, getattr(e, "strerror", None) or type(e).__name__) from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise _broken(path, f"not JSON: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        raise _broken(path, f"not a version-{CACHE_VERSION} preset cache")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise _broken(path, "no 'entries' object")
    for key, record in entries.items():
        why = _record_problem(record)
        if why:
            raise _broken(path, f"entry {key!r}: {why}")
    return entries


def _record_problem(record: Any) -> str | None:
    """Why a calibration record is unusable, or None."""
    if not isinstance(record, dict) or not isinstance(record.get("presets"), dict):
        return "no 'presets' object"
    for preset, group in record["presets"].items():
        if preset not in PRESETS:
            return f"unknown preset {preset!r}"
        chosen = group.get("chosen") if isinstance(group, dict) else None
        if chosen is None:
            continue  # calibrated, no lossless candidate: the static table applies
        if not isinstance(chosen, dict) or not isinstance(chosen.get("spec"), str):
            return f"{preset}: 'chosen' has no spec"
        k = chosen.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 64:
            return f"{preset}: K {k!r} is not an integer in 1..64"
        try:
            parsed = parse(chosen["spec"])
        except SpecdecError:
            return f"{preset}: {chosen['spec']!r} is not a drafter spec"
        if parsed.text in PRESETS:
            return f"{preset}: a preset cannot resolve to a preset"
    return None


def write_cache(key: str, record: dict[str, Any], path: Path | None = None) -> Path:
    """Store record under key (the others kept; an unreadable file replaced), atomically."""
    path = path or cache_path()
    try:
        entries = read_cache(path)
    except SpecdecError:
        entries = {}
    why = _record_problem(record)
    if why:
        raise SpecdecError(f"calibration record not stored ({why})")
    entries[key] = record
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1) + "\n")
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------- resolving


def static(preset: str, key: str, why: str) -> Resolution:
    """The static table's configuration for preset, with why it applies."""
    p = PRESETS[preset]
    return Resolution(preset, p.spec, p.k, "fallback", f"static table, {why}", key)


def resolve(preset: str, key: str, entries: dict[str, dict[str, Any]]) -> Resolution:
    """What preset runs on the machine, dtype and target of `key`: the calibrated choice when
    `entries` (the cache) holds one, else the static table."""
    if preset not in PRESETS:
        raise SpecdecError(f"{preset!r} is not a preset; presets: {', '.join(PRESETS)}")
    record = entries.get(key)
    if record is None:
        return static(preset, key, "no calibration for this machine and dtype")
    group = record["presets"].get(preset)
    if not group:
        return static(preset, key, f"the calibration did not measure {preset}")
    chosen = group.get("chosen")
    if chosen is None:
        return static(preset, key, "the calibration found no lossless candidate")
    why = f"{num(chosen.get('speedup'))}x over the baseline on {group.get('n_prompts')} " + (
        f"calibration prompt(s) of {group.get('max_new_tokens')} tokens, {record.get('date')}"
    )
    return Resolution(preset, chosen["spec"], chosen["k"], "calibration", why, key, group)


def num(x: Any) -> str:
    """A speedup with two decimals ('?' when it is not a number)."""
    return f"{x:.2f}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "?"


# -------------------------------------------------------------------------------- the rule


def candidates_for(device_type: str) -> list[Candidate]:
    """The candidates that run on this device (int8w's kernel is the CPU's)."""
    return [c for c in CANDIDATES if device_type == "cpu" or not c.cpu_only]


def static_candidate(preset: str) -> Candidate:
    """The static table's configuration of preset, as a candidate."""
    p = PRESETS[preset]
    return Candidate(p.spec, p.k)


def choose(
    rows: Sequence[dict[str, Any]],
    candidates: Sequence[Candidate],
    baseline: str = BASELINE_ARM,
    incumbent: Candidate | None = None,
    margin: float = MARGIN,
) -> dict[str, Any]:
    """The measured rule (module docstring) on a calibration's rows (one per prompt and arm, with
    `method`, `wall_s` and `identical`, as `measure.paired.run_paired` writes them; the
    baseline's arm is `baseline`): per candidate its speedup and identical share, and the
    choice (None when no candidate is lossless). `incumbent`: the preset's static configuration,
    kept unless a lossless challenger is at least `margin` faster (None: no incumbent)."""
    walls: dict[str, float] = {}
    same: dict[str, list[bool]] = {}
    for r in rows:
        walls[r["method"]] = walls.get(r["method"], 0.0) + float(r["wall_s"])
        same.setdefault(r["method"], []).append(bool(r["identical"]))
    base = walls.get(baseline)
    if not base:
        raise SpecdecError("calibration: no baseline rows to compare with")
    measured: dict[str, dict[str, Any]] = {}
    for c in candidates:
        if c.name not in walls:
            continue
        n_same = same[c.name]
        measured[c.name] = {
            "spec": c.spec,
            "k": c.k,
            "wall_s": walls[c.name],
            "speedup": base / walls[c.name] if walls[c.name] > 0 else None,
            "identical": sum(n_same) / len(n_same),
        }
    lossless = [m for m in measured.values() if m["identical"] == 1.0 and m["speedup"]]
    best = max(lossless, key=lambda m: m["speedup"], default=None)  # max keeps the first on ties
    held = measured.get(incumbent.name) if incumbent is not None else None
    if best is not None and held in lossless and best["speedup"] < held["speedup"] * (1 + margin):
        best = held  # no challenger clears the margin: the static configuration stays
    return {
        "baseline_wall_s": base,
        "candidates": measured,
        "incumbent": None if incumbent is None else incumbent.name,
        "margin": margin,
        "chosen": None if best is None else {k: best[k] for k in ("spec", "k", "speedup")},
    }
