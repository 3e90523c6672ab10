"""Command line: `generate` (one JSON object per prompt) and `bench` (the performance comparison).

Checks every argument before loading anything, and turns each `SpecdecError` into one line on
stderr with exit status 2. Knows nothing of the internals beyond the public API.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.errors import SpecdecError

DTYPES = ("auto", "float32", "bfloat16", "float16")
DEVICES = ("auto", "cpu", "cuda")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        raise SpecdecError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specdec_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--target", required=True, help="embedded, a hub id or a local path")
        p.add_argument("--dtype", default="auto", choices=DTYPES)
        p.add_argument("--device", default="auto", choices=DEVICES)
        p.add_argument("--seed", type=int, default=0)

    g = sub.add_parser("generate", help="generate with or without speculation")
    common(g)
    g.add_argument(
        "--draft",
        default="none",
        help="none, bigram, ngram, ngram+bigram, self, shared, tree, model:ID",
    )
    g.add_argument("--k", type=int, default=4, help="draft length K")
    g.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--max-new-tokens", type=int, default=64)
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt")
    src.add_argument("--prompt-file", type=Path, help="one prompt per line")
    g.add_argument("--json", action="store_true", help="one JSON object per prompt")

    b = sub.add_parser("bench", help="paired benchmark against the baseline and Hugging Face")
    common(b)
    b.add_argument(
        "--prompts",
        type=int,
        default=10,
        help="held-out prompts per group, interleaved (fewer for a smoke run)",
    )
    b.add_argument("--max-new-tokens", type=int, default=None)
    b.add_argument("--quick", action="store_true", help="a smaller run (smoke test)")
    return parser


def read_prompts(args: argparse.Namespace) -> list[str]:
    if args.prompt is not None:
        prompts = [args.prompt]
    else:
        try:
            text = args.prompt_file.read_text(encoding="utf-8")
        except OSError as e:
            why = e.strerror or type(e).__name__
            raise SpecdecError(
                f"cannot read prompt file {str(args.prompt_file)!r}: {why}"
            ) from None
        except UnicodeDecodeError:
            raise SpecdecError(
                f"cannot read prompt file {str(args.prompt_file)!r}: it is not UTF-8 text"
            ) from None
        prompts = [line for line in text.splitlines() if line.strip()]
        if not prompts:
            raise SpecdecError(f"prompt file {str(args.prompt_file)!r} has no non-empty line")
    for i, p in enumerate(prompts):
        if not p.strip():
            raise SpecdecError("the prompt is empty or whitespace: give some text")
        if "\x00" in p:
            raise SpecdecError(f"prompt {i + 1} contains a NUL byte")
    return prompts


def cmd_generate(args: argparse.Namespace) -> int:
    from specdec_lib.drafters import check_drafter_spec

    sampling = SamplingConfig(args.temperature, args.top_k, args.top_p, args.seed)
    spec = SpecConfig(args.k, args.max_new_tokens)
    kind, draft_args = check_drafter_spec(args.draft)
    if kind == "tree" and not sampling.greedy:
        from specdec_lib.tree import GREEDY_ONLY

        raise SpecdecError(GREEDY_ONLY)
    prompts = read_prompts(args)
    from specdec_lib.generate import Generator  # heavy imports only once the input is sound
    from specdec_lib.runtime import setup

    gen = Generator.load(args.target, args.draft, dtype=args.dtype, device=args.device)
    rows = args.k + 1  # the widest call: K + 1 positions, or a tree's nodes + 1
    if kind == "tree":
        from specdec_lib.drafters import TREE_NODES

        rows = max(rows, (int(draft_args[0]) if draft_args else TREE_NODES) + 1)
    setup(gen.target.model, rows)  # threads chosen as the bench and the study do; warm
    for text in prompts:
        out = gen.generate_text(text, spec, sampling)
        if args.json:
            print(json.dumps(out, ensure_ascii=False), flush=True)
        else:
            s = out["stats"]
            print(out["text"])
            print(
                f"[{s['new_tokens']} tokens in {s['wall_s']:.2f} s, acceptance "
                f"{s['acceptance_rate']:.1%}, {s['mean_accepted_length']:.2f} tokens/call]",
                file=sys.stderr,
            )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from specdec_lib.bench import run_bench

    run_bench(
        target=args.target,
        dtype=args.dtype,
        device=args.device,
        n_prompts=args.prompts,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        quick=args.quick,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args = build_parser().parse_args(argv)
        if args.command == "generate":
            return cmd_generate(args)
        return cmd_bench(args)
    except SpecdecError as e:
        print(f"specdec: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specdec: interrupted", file=sys.stderr)
        return 130
