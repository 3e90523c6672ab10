"""A distilled draft: a few of the target's decoder layers, retrained to imitate the whole target.

The draft is a causal LM of `DistillConfig.n_layers` decoder layers of the target's own
architecture. It shares the target's token embeddings and LM head, frozen (no copy), and owns its
layers and final norm, initialised from the target's first layers (`source_layers`: an early
exit) and then trained on the WikiText-2 fit split (never the eval articles) to match the
target's next-token distributions. The loss is the KL divergence from the teacher's distribution
to the student's, both as softmaxes over the `vocab_keep` most frequent ids of the training
windows (the LM head's product is what costs most on a CPU; the pruned-head self-draft shows how
rarely the target's choice falls outside them), coarsened to the teacher's `top_k` ids plus one
bucket for the rest of its mass (a lower bound of the KL, exact on those buckets). At inference
the draft uses the full LM head. Training runs a
fixed step and token budget (its wall time on the machine that trained it is in the training
record), one pass over distinct windows of `seq_len` tokens (BOS + text), AdamW with a linear
warm-up and cosine decay, seeded.

What it is: a small model of its own whose hidden states are its own computation, run on its own
KV cache; its attention sees the context through its few layers only, so its guesses can drift
from the target's as the context grows. What it is not: a pretrained small LM (the earlier study's
Gemma 3 1B was pretrained on trillions of tokens; this one saw a few tens of thousands of tokens
of one corpus), nor independent of the target (it starts from the target's weights and shares
its embeddings and head).

The trained layers are cached beside the embedded model (`cache_dir`), with the training record
(seed, data, hyper-parameters, wall time, loss and agreement per step) in `training.json` and a
completeness marker written last. `ensure_distilled` builds it if absent; `training_record`
returns the record. Knows nothing about the decode loop or the verifier.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.registry import DISTILLED_MARKER as MARKER
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.drafters.self_draft import decoder_path
from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.models import LoadedModel

RECORD = "training.json"
WEIGHTS = "draft.safetensors"
FORMAT = 1  # bump when the saved layout changes


@dataclass(frozen=True)
class DistillConfig:
    """The recipe; its hash names the cache directory, so a changed recipe trains anew."""

    n_layers: int = 6
    source_layers: tuple[int, ...] | None = None  # None: the target's first n_layers
    steps: int = 120
    batch: int = 4
    seq_len: int = 128  # BOS + 127 article tokens per window
    lr: float = 5e-4
    warmup: int = 10
    weight_decay: float = 0.0
    top_k: int = 32  # teacher ids kept apart in the loss; the rest of its mass is one bucket
    vocab_keep: int = 16384  # the loss's softmaxes over the most frequent training ids (0: all)
    head_chunk: int = 256  # rows per LM-head product (memory: chunk x vocabulary floats)
    seed: int = 0
    data_source: str = "bundled"
    split_seed: int = 0  # the study's fit/eval article split

    @property
    def tokens(self) -> int:
        """Training tokens the recipe reads."""
        return self.steps * self.batch * self.seq_len


DEFAULT = DistillConfig()


# --------------------------------------------------------------------------- the draft model


def _decoder(model: torch.nn.Module) -> torch.nn.Module:
    return model.get_submodule(decoder_path(model))


def source_layers(cfg: DistillConfig, total: int) -> tuple[int, ...]:
    """The target layers that initialise the draft's: the given ones, or the first n_layers
    (an early exit: on the embedded 270M the first six start far closer to the target than
    first + last layers, whose middle gap leaves the last layers garbage inputs)."""
    if cfg.source_layers is not None:
        layers = tuple(cfg.source_layers)
    else:  # a target of few layers (a test model) gets fewer, so the draft stays smaller
        layers = tuple(range(min(cfg.n_layers, max(total - 1, 1))))
    if not layers or not all(0 <= i < total for i in layers):
        raise SpecdecError(f"a distilled draft needs source layers in [0, {total}), got {layers}")
    return layers


def draft_skeleton(target: torch.nn.Module, layers: tuple[int, ...]) -> torch.nn.Module:
    """A causal LM of len(layers) layers of the target's decoder type, sharing the target's
    embeddings and LM head (the same modules), its layers and final norm deep copies of the
    target's `layers` and norm (float32 for training or the dtype of the target)."""
    from transformers import AutoModelForCausalLM

    if not hasattr(target, "lm_head"):
        raise SpecdecError(f"a distilled draft needs an LM head (lm_head); {type(target).__name__}")
    dec = _decoder(target)
    cfg = copy.deepcopy(dec.config)
    vocab = cfg.vocab_size
    cfg.num_hidden_layers = len(layers)
    if getattr(cfg, "layer_types", None) is not None:
        cfg.layer_types = [dec.config.layer_types[i] for i in layers]
    cfg.vocab_size = 8  # no throw-away full-size embedding: the target's is put in below
    cfg.tie_word_embeddings = False
    attn = dec.config._attn_implementation
    draft = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    draft.model.embed_tokens = dec.embed_tokens
    draft.lm_head = target.lm_head
    draft.model.layers = torch.nn.ModuleList([copy.deepcopy(dec.layers[i]) for i in layers])
    draft.model.norm = copy.deepcopy(dec.norm)
    draft.config.vocab_size = vocab
    p = next(dec.parameters())
    draft.to(device=p.device)
    own(draft).to(dtype=p.dtype)
    draft.eval()
    draft.requires_grad_(False)
    return draft


def own(draft: torch.nn.Module) -> torch.nn.ModuleDict:
    """The draft's own trainable modules: its layers and final norm."""
    return torch.nn.ModuleDict({"layers": draft.model.layers, "norm": draft.model.norm})


def own_state(draft: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The draft's own weights, in float32, as saved."""
    return {k: v.detach().float().contiguous() for k, v in own(draft).state_dict().items()}


# --------------------------------------------------------------------------- data


def fit_windows(tokenizer, cfg: DistillConfig) -> tuple[torch.Tensor, dict[str, Any]]:
    """[n, seq_len] windows (BOS + seq_len - 1 tokens) cut from the fit split's articles in a
    seeded order, each window inside one article; what was used, for the record."""
    import random

    from specdec_lib.data import article_token_ids, load_wikitext, split_articles

    corpus = load_wikitext(cfg.data_source)
    fit, held_out = split_articles(corpus, seed=cfg.split_seed)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else 0
    n = cfg.steps * cfg.batch
    span = cfg.seq_len - 1
    order = list(range(len(fit)))
    random.Random(cfg.seed).shuffle(order)
    windows: list[list[int]] = []
    used: list[str] = []
    for idx, ids in zip(order, article_token_ids(tokenizer, [fit[i] for i in order]), strict=True):
        cut = [ids[j : j + span] for j in range(0, len(ids) - span + 1, span)]
        if cut:
            used.append(fit[idx].title)
        windows += [[bos, *w] for w in cut]
        if len(windows) >= n:
            break
    if len(windows) < n:
        raise SpecdecError(
            f"the fit split holds {len(windows)} windows of {cfg.seq_len} tokens; the recipe "
            f"needs {n}: lower steps, batch or seq_len"
        )
    data = {
        "source": corpus.source,
        "split": f"fit half of {corpus.split} (split_articles seed {cfg.split_seed})",
        "fit_articles": len(fit),
        "eval_articles": len(held_out),
        "articles_used": used,
        "windows": n,
        "tokens": n * cfg.seq_len,
    }
    return torch.tensor(windows[:n], dtype=torch.long), data


# --------------------------------------------------------------------------- training


def _softcap(model: torch.nn.Module, logits: torch.Tensor) -> torch.Tensor:
    cap = getattr(_decoder(model).config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def head_of(model: torch.nn.Module, rows: torch.Tensor | None) -> torch.nn.Module:
    """The LM head, or a frozen copy of its `rows` (logits over those ids, in that order)."""
    if rows is None:
        return model.lm_head
    from specdec_lib.drafters.self_draft import pruned_linear

    return pruned_linear(model.lm_head, rows)


@torch.no_grad()
def teacher_targets(
    target: torch.nn.Module,
    ids: torch.Tensor,
    top_k: int,
    chunk: int,
    head: torch.nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The teacher's top-k (head row) ids [N, k], their log-probabilities [N, k] and its greedy
    row [N] for every position of ids [B, L] (N = B * L), over the rows of head (default: the
    LM head)."""
    head = head if head is not None else target.lm_head
    hidden = _decoder(target)(input_ids=ids, use_cache=False).last_hidden_state
    hidden = hidden.reshape(-1, hidden.shape[-1])  # [N, H]
    tops, logps = [], []
    for h in hidden.split(chunk):
        logp = torch.log_softmax(_softcap(target, head(h)).float(), -1)  # [n, V']
        lp, ix = logp.topk(top_k, -1)
        tops.append(ix)
        logps.append(lp)
    return torch.cat(tops), torch.cat(logps), torch.cat(tops)[:, 0]


def coarse_kl(
    logits: torch.Tensor,  # [n, V] student
    top: torch.Tensor,  # [n, k] teacher ids
    t_logp: torch.Tensor,  # [n, k] teacher log-probabilities
) -> torch.Tensor:
    """Summed KL(teacher || student) over the buckets {each top-k id, everything else}."""
    s_logp = logits.float().log_softmax(-1)
    s_top = s_logp.gather(-1, top)  # [n, k]
    t_rest = (1 - t_logp.exp().sum(-1)).clamp_min(1e-12)  # [n]
    s_rest = (1 - s_top.exp().sum(-1)).clamp_min(1e-12)
    kl = (t_logp.exp() * (t_logp - s_top)).sum(-1) + t_rest * (t_rest.log() - s_rest.log())
    return kl.sum()


def distill(
    target: torch.nn.Module,
    windows: torch.Tensor,  # [steps * batch, seq_len]
    cfg: DistillConfig,
    *,
    progress: bool = True,
) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Train a draft on windows against the target (float32); returns it and its curve."""
    from specdec_lib.drafters.self_draft import frequent_ids

    torch.manual_seed(cfg.seed)
    total = len(_decoder(target).layers)
    layers = source_layers(cfg, total)
    draft = draft_skeleton(target, layers)
    vocab = target.lm_head.weight.shape[0]
    keep = None
    if 0 < cfg.vocab_keep < vocab:  # both softmaxes over the most frequent ids of the windows
        keep = frequent_ids(windows.flatten().tolist(), vocab, cfg.vocab_keep)
    head = head_of(target, keep)  # [V', H], shared by teacher and student, frozen
    params = list(own(draft).parameters())
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)

    def lr_at(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        frac = (step - cfg.warmup) / max(cfg.steps - cfg.warmup, 1)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    curve: list[dict[str, float]] = []
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    bar = tqdm(range(cfg.steps), desc="distilling the draft", disable=not progress)
    for step in bar:
        ids = windows[step * cfg.batch : (step + 1) * cfg.batch].to(next(draft.parameters()).device)
        top, t_logp, greedy = teacher_targets(target, ids, cfg.top_k, cfg.head_chunk, head)
        draft.train()
        hidden = draft.model(input_ids=ids, use_cache=False).last_hidden_state
        hidden = hidden.reshape(-1, hidden.shape[-1])  # [N, H], with the graph of the layers
        free = hidden.detach().requires_grad_(True)
        n = free.shape[0]
        loss_sum, agree = 0.0, 0
        for rows in torch.arange(n).split(cfg.head_chunk):
            logits = _softcap(draft, head(free[rows]))  # [c, V']
            loss = coarse_kl(logits, top[rows], t_logp[rows]) / n
            loss.backward()  # into free.grad, one head chunk at a time
            loss_sum += float(loss.detach())
            agree += int((logits.argmax(-1) == greedy[rows]).sum())
        hidden.backward(free.grad)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        draft.eval()
        curve.append({"step": step + 1, "loss": loss_sum, "agreement": agree / n})
        bar.set_postfix(loss=f"{loss_sum:.3f}", agree=f"{agree / n:.2f}")
    for p in params:
        p.requires_grad_(False)
    timing = {
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - cpu0,
        "threads": torch.get_num_threads(),
    }
    return draft, {
        "source_layers": list(layers),
        "loss_vocabulary": vocab if keep is None else int(keep.numel()),
        "curve": curve,
        "timing": timing,
    }


# --------------------------------------------------------------------------- the cache


def target_fingerprint(target: torch.nn.Module) -> str:
    """A short hash of the target's decoder shape and a slice of its weights, the same whatever
    dtype it was loaded in (weights compared as bfloat16)."""
    dec = _decoder(target)
    keys = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size")
    shape = {k: getattr(dec.config, k, None) for k in keys}
    h = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
    for p in (dec.embed_tokens.weight, next(dec.layers[0].parameters()), dec.norm.weight):
        h.update(p.detach().flatten()[:4096].to(torch.bfloat16).float().cpu().numpy().tobytes())
    return h.hexdigest()[:12]


def recipe_hash(cfg: DistillConfig) -> str:
    """A short hash of the recipe and the saved layout's format."""
    blob = json.dumps({"format": FORMAT, **dataclasses.asdict(cfg)}, sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def cache_dir(target: LoadedModel, cfg: DistillConfig = DEFAULT) -> Path:
    """Beside the embedded model's cache: distilled-<target>-<recipe>."""
    from specdec_lib.models.embedded import embedded_cache_dir

    name = f"distilled-{target_fingerprint(target.model)}-{recipe_hash(cfg)}"
    return embedded_cache_dir().parent / name


def cached_for(target_name: str, cfg: DistillConfig = DEFAULT) -> list[Path]:
    """The complete cached drafts of this recipe whose training record names target_name,
    found without loading the target (the fingerprint in a folder's name needs its weights):
    what `results.inputs` fingerprints for a stored result's `distilled`."""
    from specdec_lib.models.embedded import embedded_cache_dir

    found = []
    for d in sorted(embedded_cache_dir().parent.glob(f"distilled-*-{recipe_hash(cfg)}")):
        try:
            record = json.loads((d / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if is_complete(d) and isinstance(record, dict) and record.get("target") == target_name:
            found.append(d)
    return found


def is_complete(directory: Path) -> bool:
    """Whether directory holds a finished distilled draft (its marker is written last)."""
    return (Path(directory) / MARKER).is_file()


def _float32_teacher(target: LoadedModel) -> torch.nn.Module:
    if target.dtype == torch.float32:
        return target.model
    return copy.deepcopy(target.model).float()


def ensure_distilled(
    target: LoadedModel, cfg: DistillConfig = DEFAULT, *, progress: bool = True
) -> Path:
    """The distilled draft's directory for this target, trained first if it is not cached
    (under a file lock, staged in a temporary directory, the marker written last)."""
    from filelock import FileLock

    out = cache_dir(target, cfg)
    if is_complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if is_complete(out):
            return out
        windows, data = fit_windows(target.tokenizer, cfg)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        draft, trained = distill(_float32_teacher(target), windows, cfg, progress=progress)
        record = {
            "what": "a distilled draft: target layers retrained against the target's "
            "next-token distributions, sharing its frozen embeddings and LM head",
            "target": target.name,
            "target_fingerprint": target_fingerprint(target.model),
            "recipe": dataclasses.asdict(cfg),
            "recipe_hash": recipe_hash(cfg),
            "loss": "KL(teacher || student), mean per token, both softmaxes over the "
            "vocab_keep most frequent ids of the training windows, coarsened to the teacher's "
            "top_k ids + one rest bucket; agreement: student argmax == teacher argmax over "
            "those ids on the training batch (before the step)",
            "data": data,
            **trained,
            "started_utc": started,
            "machine": {
                "processor": platform.processor() or platform.machine(),
                "cpu_count": os.cpu_count(),
                "torch": torch.__version__,
            },
        }
        save(out, draft, record)
    return out


def save(out: Path, draft: torch.nn.Module, record: dict[str, Any]) -> None:
    """The draft's weights and training record into out, whole or not at all."""
    from safetensors.torch import save_file

    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        save_file(own_state(draft), str(work / WEIGHTS))
        (work / RECORD).write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
        marker = {"format": FORMAT, "layers": record["source_layers"]}
        (work / MARKER).write_text(json.dumps(marker) + "\n")  # last: the directory is complete
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def training_record(target: LoadedModel | Path, cfg: DistillConfig = DEFAULT) -> dict[str, Any]:
    """The training record of a built draft (a directory, or the target's cached one)."""
    directory = target if isinstance(target, (str, Path)) else cache_dir(target, cfg)
    if not is_complete(Path(directory)):
        raise SpecdecError(
            f"no distilled draft in {directory}: build it first (drafters.distilled."
            "ensure_distilled, or any run with --draft distilled)"
        )
    return json.loads((Path(directory) / RECORD).read_text())


def marker_layers(directory: Path) -> tuple[int, ...]:
    """The target layers a saved draft copies, from its marker file ({"layers": [i, ...]}: a
    non-empty list of distinct layer numbers); else a one-line SpecdecError naming the file."""
    path = Path(directory) / MARKER
    try:
        layers = json.loads(path.read_text(encoding="utf-8")).get("layers")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        layers = None
    ok = isinstance(layers, list) and layers and len(set(map(repr, layers))) == len(layers)
    if not ok or not all(type(i) is int and i >= 0 for i in layers):
        raise SpecdecError(
            f"{str(path)!r} is not a distilled draft's marker: it must be JSON "
            '{"layers": [distinct layer numbers, at least one]}'
        )
    return tuple(layers)


def load_distilled(target: LoadedModel, directory: Path) -> torch.nn.Module:
    """The draft saved in directory, on the target's device and dtype, sharing its embeddings
    and LM head."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    directory = Path(directory)
    if not is_complete(directory):
        raise SpecdecError(f"{str(directory)!r} holds no complete distilled draft ({MARKER})")
    layers = marker_layers(directory)
    total = len(_decoder(target.model).layers)
    if max(layers) >= total:
        raise SpecdecError(f"the distilled draft in {str(directory)!r} is not for this target")
    draft = draft_skeleton(target.model, layers)
    try:
        state = load_file(str(directory / WEIGHTS))
    except (SafetensorError, OSError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise SpecdecError(f"{str(directory / WEIGHTS)!r} cannot be read ({first})") from None
    dtype = next(own(draft).parameters()).dtype
    try:
        own(draft).load_state_dict({k: v.to(dtype) for k, v in state.items()})
    except RuntimeError:
        raise SpecdecError(
            f"the distilled draft in {str(directory)!r} does not fit this target"
        ) from None
    return draft


class DistilledDrafter(ModelDrafter):
    """A draft model distilled from the target, loaded from its directory."""

    name = "distilled"

    def __init__(self, target: LoadedModel, directory: Path, *, use_cache: bool = True):
        super().__init__(
            load_distilled(target, directory), vocab_size=target.vocab_size, use_cache=use_cache
        )
        self.directory = Path(directory)

    def training_record(self) -> dict[str, Any]:
        """How this draft was trained (`training.json`): the study copies it into its results."""
        return training_record(self.directory)


def build(args: tuple[str | None], ctx: DraftContext) -> DistilledDrafter:
    """`distilled[:PATH]`: the draft in PATH, else the cached one for this target (trained once)."""
    directory = Path(args[0]).expanduser() if args[0] else ensure_distilled(ctx.target)
    return DistilledDrafter(ctx.target, directory, use_cache=ctx.use_cache)
