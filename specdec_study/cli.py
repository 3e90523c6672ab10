"""Command line: `generate` (one JSON object per prompt), `bench` (the performance comparison),
`calibrate` (what the presets `best` and `best_short` run on this machine: `drafters.presets`),
`claims` (every number the book states, with the expression that recomputes it) and `reproduce`
(today's code on the first prompts of the committed experiments).

Checks every argument before loading anything, and turns each `SpecdecError` into one line on
stderr with exit status 2. A prompt file is read and checked whole before the model loads (size,
UTF-8, every line), and every prompt is tokenized and checked against the context window before
the first one is generated, so a bad line prints nothing for any prompt. Lines are split on "\n"
only ("\r\n" too; never on form feeds or Unicode separators), a UTF-8 BOM is dropped, blank
lines are skipped, and each output carries its 1-based input line. Once the model is loaded the
weight-loading progress bar and library warnings are off, so an error is the only line. When the
reader of stdout goes away (`| head -1`), it exits quietly with status 141 (as after SIGPIPE).
Knows nothing of the internals beyond the public API.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from specdec_lib.config import SamplingConfig, SpecConfig, check_seed
from specdec_lib.errors import SpecdecError

DTYPES = ("auto", "float32", "bfloat16", "float16")
DEVICES = ("auto", "cpu", "cuda")
MAX_PROMPT_FILE_BYTES = 64 * 2**20  # refused by its size, before it is read
MAX_PROMPT_CHARS = 1_000_000  # per line; no context window holds more (refused before loading)
_BOM = "\ufeff"
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def _seed(text: str) -> int:
    """argparse type for --seed: an integer every RNG accepts."""
    try:
        return check_seed(int(text))
    except ValueError as e:  # SpecdecError is a ValueError
        msg = str(e) if isinstance(e, SpecdecError) else f"seed must be an integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


DEFAULT_K = 4  # when neither --k nor a preset gives K


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        raise SpecdecError(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `python -m specdec_lib` with its `generate`, `bench`, `calibrate`,
    `claims`, `reproduce` and `import-bundle` commands."""
    parser = _Parser(prog="python -m specdec_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _generate_args(sub.add_parser("generate", help="generate with or without speculation"))
    _bench_args(
        sub.add_parser("bench", help="paired benchmark against the baseline and Hugging Face")
    )
    cal = sub.add_parser(
        "calibrate", help="choose what the presets best and best_short run on this machine"
    )
    _model_args(cal)
    cal.add_argument(
        "--replace-broken", action="store_true", help="rewrite a cache file that does not parse"
    )
    c = sub.add_parser("claims", help="every number the book states, with how to recompute it")
    c.add_argument("--profile", default=None, help="the results' profile (default: the book's)")
    c.add_argument("--json", action="store_true", help="a JSON list instead of Markdown tables")
    c.add_argument("--check", action="store_true", help="recompute each claim; 1 if any differs")

    r = sub.add_parser("reproduce", help="re-run the first prompts of each committed experiment")
    r.add_argument("--profile", default="embedded")
    r.add_argument("--prompts", type=int, default=1, help="prompts per experiment (from the first)")
    r.add_argument("--experiment", action="append", default=[], help="only this one (repeatable)")
    r.add_argument("--no-record", action="store_true", help="do not write reproduce.json")

    i = sub.add_parser("import-bundle", help="check a results zip from Colab and unpack it")
    i.add_argument("bundle", help="the zip a Colab notebook's last cell wrote")
    i.add_argument("--profile", default=None, help="the bundle's profile (refused if not)")
    i.add_argument("--replace", action="store_true", help="overwrite experiments already there")
    return parser


def _model_args(p: argparse.ArgumentParser) -> None:
    """The target, dtype, device and seed that `generate` and `bench` share."""
    p.add_argument("--target", required=True, help="embedded, a hub id or a local path")
    p.add_argument("--dtype", default="auto", choices=DTYPES)
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--seed", type=_seed, default=0)


def _generate_args(g: argparse.ArgumentParser) -> None:
    """`generate`'s arguments: the drafter, decoding settings and where the prompts come from."""
    _model_args(g)
    g.add_argument(
        "--draft",
        default="none",
        help="a drafter spec or preset (specdec_lib/drafters/registry.py): none, bigram, ngram, "
        "self:18:16384, lookup+shared:4:2, adaptive:self, model:ID, best, best_short, ...",
    )
    g.add_argument(
        "--k",
        type=int,
        default=None,
        help="draft length K (default: the K of the configuration a preset such as best resolves "
        "to, else 4)",
    )
    g.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--max-new-tokens", type=int, default=64)
    g.add_argument(
        "--repetition-penalty",
        type=float,
        default=1.0,
        help="Hugging Face's repetition penalty, applied to the target's logits in verification "
        "(1.0: off)",
    )
    g.add_argument(
        "--no-repeat-ngram-size",
        type=int,
        default=0,
        help="ban any token that would repeat an n-gram of this size (Hugging Face's; 0: off)",
    )
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt")
    src.add_argument("--prompt-file", type=Path, help="one prompt per line")
    g.add_argument("--json", action="store_true", help="one JSON object per prompt")


def _bench_args(b: argparse.ArgumentParser) -> None:
    """`bench`'s arguments: prompts per group, token counts and which groups run."""
    _model_args(b)
    b.add_argument(
        "--prompts",
        type=int,
        default=10,
        help="held-out prompts per group, interleaved (fewer for a smoke run)",
    )
    b.add_argument("--max-new-tokens", type=int, default=None)
    b.add_argument("--quick", action="store_true", help="a smaller run (smoke test)")
    b.add_argument(
        "--groups",
        default="long,short,loopfree",
        help="comma-separated groups to run: long (128 tokens), short (32 tokens), loopfree "
        "(greedy with a repetition penalty and sampling at T = 0.7, each against its HF peers)",
    )
    b.add_argument(
        "--arms",
        default="",
        help="comma-separated arms to keep besides our baseline (e.g. int8w,hf: `hf` keeps every "
        "Hugging Face arm); all arms by default",
    )
    b.add_argument(
        "--presets",
        default="auto",
        choices=("auto", "cached", "static"),
        help="what best and best_short run: auto (this machine's cached calibration, else one "
        "run now and cached; --quick: the static table instead), cached (else the static "
        "table) or static (the static table)",
    )
    b.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the run's result folder (summary.json, config.json, env.json, bench.log); default "
        "$SPECDEC_RESULTS/embedded/bench (bench-loopfree for --groups loopfree; under smoke/ "
        "for --quick); required for a --target other than embedded",
    )


@dataclass(frozen=True)
class Prompt:
    """One prompt to generate from, with the line it came from."""

    line: int  # 1-based line of the prompt file (1 for --prompt)
    text: str


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise SpecdecError(f"{where} contains a NUL byte")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:  # undecodable argv bytes arrive as lone surrogates
        bad = text[e.start]
        byte = f" 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else ""
        raise SpecdecError(
            f"{where} is not valid UTF-8 text (undecodable byte{byte} at character {e.start + 1})"
        ) from None
    if len(text) > MAX_PROMPT_CHARS:
        raise SpecdecError(
            f"{where} has {len(text):,} characters; the limit is {MAX_PROMPT_CHARS:,} "
            "(no context window holds more)"
        )


def _read_prompt_file(path: Path) -> list[Prompt]:
    name = repr(str(path))
    try:
        size = path.stat().st_size
        if path.is_file() and size > MAX_PROMPT_FILE_BYTES:
            raise SpecdecError(
                f"prompt file {name} is {size:,} bytes; the limit is {MAX_PROMPT_FILE_BYTES:,}"
            )
        # read at most one byte past the limit, whatever the file is (a device such as
        # /dev/zero, a FIFO or standard input has no size to check first)
        with open(path, "rb") as f:
            data = f.read(MAX_PROMPT_FILE_BYTES + 1)
        if len(data) > MAX_PROMPT_FILE_BYTES:
            raise SpecdecError(
                f"prompt file {name} holds more than {MAX_PROMPT_FILE_BYTES:,} bytes, the limit"
            )
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise SpecdecError(f"cannot read prompt file {name}: {why}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise SpecdecError(
            f"cannot read prompt file {name}: line {line} is not UTF-8 text "
            f"(byte 0x{data[e.start]:02x})"
        ) from None
    text = text.removeprefix(_BOM)
    prompts = []
    # "\n" only: str.splitlines would also split on \f, \x1c-\x1e, U+0085, U+2028, U+2029
    for i, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        _check_text(line, f"prompt file {name} line {i}")
        prompts.append(Prompt(i, line))
    if not prompts:
        raise SpecdecError(f"prompt file {name} has no non-empty line")
    return prompts


def read_prompts(args: argparse.Namespace) -> list[Prompt]:
    """Every prompt, checked; nothing is loaded or generated before all of them pass."""
    if args.prompt is None:
        return _read_prompt_file(args.prompt_file)
    if not args.prompt.strip():
        raise SpecdecError("the prompt is empty or whitespace: give some text")
    _check_text(args.prompt, "the prompt")
    return [Prompt(1, args.prompt)]


def _quiet_loading() -> None:
    """No weight-loading progress bar or library warnings: an error must be the only line."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def cmd_generate(args: argparse.Namespace) -> int:
    """`generate`: check every prompt, load the models once, print each continuation and stats."""
    from specdec_lib.drafters.registry import REGISTRY, parse
    from specdec_lib.models.loading import check_model_name

    sampling = SamplingConfig(args.temperature, args.top_k, args.top_p, args.seed)
    draft = parse(args.draft)
    k = args.k if args.k is not None else (draft.k or DEFAULT_K)  # an explicit --k wins
    if args.max_new_tokens < 1:  # nothing to generate: no call to report
        raise SpecdecError(f"max_new_tokens must be at least 1, got {args.max_new_tokens}")
    spec = SpecConfig(k, args.max_new_tokens)
    check_model_name(args.target)
    if REGISTRY[draft.name].greedy_only and not sampling.greedy:
        from specdec_lib.core.token_tree import GREEDY_ONLY

        raise SpecdecError(GREEDY_ONLY)
    from specdec_lib.core.processors import TREE_NO_CONTROL, RepetitionControl

    control = RepetitionControl(args.repetition_penalty, args.no_repeat_ngram_size)
    if control.active and draft.name.startswith("tree"):
        raise SpecdecError(TREE_NO_CONTROL)
    prompts = read_prompts(args)
    entries = _preset_cache(args.draft)  # a broken cache is refused before loading
    from specdec_lib.generate import Generator  # heavy imports only once the input is sound
    from specdec_lib.models.loading import load_model
    from specdec_study.environment.runtime import setup

    _quiet_loading()
    if entries is None:
        gen = Generator.load(
            args.target, args.draft, dtype=args.dtype, device=args.device, k=k, control=control
        )
    else:  # a preset: what it runs on this machine and dtype, said in one line
        from specdec_lib.drafters.presets import resolve
        from specdec_study.bench.calibrate_presets import key_for

        loaded = load_model(args.target, dtype=args.dtype, device=args.device)
        res = resolve(args.draft, key_for(loaded), entries)
        print(f"specdec: {res.line()}", file=sys.stderr, flush=True)
        draft = parse(res.spec)
        k = args.k if args.k is not None else (res.k or DEFAULT_K)
        spec = SpecConfig(k, args.max_new_tokens)
        gen = Generator.from_loaded(
            loaded, res.spec, dtype=args.dtype, device=args.device, k=k, control=control
        )
    for p in prompts:  # every prompt fits before the first is generated
        try:
            gen.check_prompt(gen.encode(p.text), spec.max_new_tokens)
        except SpecdecError as e:
            if args.prompt is not None:
                raise
            raise SpecdecError(f"prompt file line {p.line}: {e}") from None
    rows = k + 1  # the widest call: K + 1 positions, or a tree's nodes + 1
    if draft.name.startswith("tree"):
        rows = max(rows, draft.args[0] + 1)  # tree[+...]:NODES
    setup(gen.target.model, rows)  # threads chosen as the bench and the study do; warm
    for p in prompts:
        out = {"line": p.line, **gen.generate_text(p.text, spec, sampling)}
        if args.json:
            print(json.dumps(out, ensure_ascii=False), flush=True)
        else:
            s = out["stats"]
            print(out["text"], flush=True)
            print(
                f"[line {p.line}: {s['new_tokens']} tokens in {s['wall_s']:.2f} s, acceptance "
                f"{s['acceptance_rate']:.1%}, {s['mean_accepted_length']:.2f} tokens/call]",
                file=sys.stderr,
            )
    return 0


def _preset_cache(draft: str) -> dict | None:
    """For a preset (`best`, `best_short`): the calibration cache's entries ({} when there is
    none; a broken file is a SpecdecError); None for any other spec."""
    from specdec_lib.drafters.registry import PRESETS

    if draft not in PRESETS:
        return None
    from specdec_lib.drafters.presets import read_cache

    return read_cache()


def cmd_calibrate(args: argparse.Namespace) -> int:
    """`calibrate`: time the presets' candidates on this machine and dtype (under a minute on
    the embedded target), store the choice in the cache and say what each preset now runs."""
    from specdec_lib.drafters import presets as P
    from specdec_lib.models.loading import check_model_name

    check_model_name(args.target)
    if not args.replace_broken:
        P.read_cache()  # a broken cache: one line, and left as it is
    from specdec_lib.models.loading import load_model
    from specdec_study.bench.calibrate_presets import calibrate_presets

    _quiet_loading()
    loaded = load_model(args.target, dtype=args.dtype, device=args.device)
    record = calibrate_presets(loaded, seed=args.seed)
    path = P.write_cache(record["key"], record)
    for preset, group in record["presets"].items():
        said = ", ".join(
            f"{name} {P.num(m['speedup'])}x"
            + ("" if m["identical"] == 1.0 else f" (identical on {m['identical']:.0%}: out)")
            for name, m in group["candidates"].items()
        )
        print(f"{preset} ({group['max_new_tokens']} tokens, n={group['n_prompts']}): {said}")
        print(P.resolve(preset, record["key"], {record["key"]: record}).line())
    print(f"{record['wall_s']:.0f} s; stored in {path} under {record['key']!r}")
    print(json.dumps(record, sort_keys=True), flush=True)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """`bench`: run the benchmark with the parsed options."""
    from specdec_study.bench.record import run_name
    from specdec_study.bench.run import parse_groups, run_bench
    from specdec_study.results.read import DEFAULT_PROFILE, results_root

    profile = "smoke" if args.quick else DEFAULT_PROFILE  # a smoke run never replaces a run
    default = results_root() / profile / run_name(parse_groups(args.groups))
    if args.out is None and not args.quick and args.target != "embedded":
        raise SpecdecError(
            f"--target {args.target} needs --out: the default folder ({default}) holds the "
            "embedded model's bench"
        )
    out = args.out or default
    if out.exists() and not out.is_dir():
        raise SpecdecError(f"--out {out} is a file, not a result folder")
    run_bench(
        target=args.target,
        dtype=args.dtype,
        device=args.device,
        n_prompts=args.prompts,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        quick=args.quick,
        groups=args.groups,
        arms=args.arms,
        presets=args.presets,
        result_dir=out,
    )
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    """`claims`: every claim of the book's results with its value, interval, n and source."""
    from specdec_study.reporting.claims import claims, claims_json, claims_markdown, differing
    from specdec_study.results.read import load_results

    p = load_results(args.profile)
    if p.empty:
        raise SpecdecError(f"no results for profile {p.name!r} under {p.root}")
    cs = claims(p)
    if args.check:
        bad = differing(cs, p)
        print(f"{len(cs)} claims recomputed from the files of {p.name}: {len(bad)} differ")
        print("\n".join(bad), end="\n" if bad else "")
        return 1 if bad else 0
    print(json.dumps(claims_json(cs), indent=1) if args.json else claims_markdown(cs, p.name))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """`reproduce`: today's code on the first prompts of each committed experiment; 1 when any
    deterministic column differs."""
    from specdec_study.results.reproduction import FAILED, report_lines

    if args.prompts < 1:
        raise SpecdecError(f"--prompts must be at least 1, got {args.prompts}")
    from specdec_study.runner.reproduce import reproduce

    _quiet_loading()
    checks = reproduce(args.profile, args.prompts, args.experiment, write=not args.no_record)
    if not checks:
        raise SpecdecError(f"no committed result of profile {args.profile!r} to reproduce")
    print("\n".join(report_lines(checks)))
    return 1 if any(c.outcome == FAILED for c in checks.values()) else 0


def cmd_import_bundle(args: argparse.Namespace) -> int:
    """`import-bundle`: a results zip checked (`results.bundle`) and unpacked into
    $SPECDEC_RESULTS/<profile>/ (default results/); a bad bundle is refused in one line."""
    from specdec_study.results.bundle import import_bundle
    from specdec_study.results.read import results_root

    root = results_root()
    names = import_bundle(Path(args.bundle), root, args.profile, replace=args.replace)
    print(f"imported {', '.join(names)} into {root}")
    return 0


COMMANDS = {
    "generate": cmd_generate,
    "bench": cmd_bench,
    "calibrate": cmd_calibrate,
    "claims": cmd_claims,
    "reproduce": cmd_reproduce,
    "import-bundle": cmd_import_bundle,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point: run one command; 2 on a SpecdecError, 130 on an interrupt."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except SpecdecError as e:
        print(f"specdec: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specdec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader left (`| head -1`): stop quietly; point stdout at /dev/null so the
        # interpreter's final flush cannot raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
