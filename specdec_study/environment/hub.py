"""`make download`: the embedded model's local cache, and where the Hugging Face hub is reachable
the profiles' hub weights and the full WikiText-2.

Knows nothing about experiments; never prints a token (a failure is its exception's type).
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import snapshot_download

from specdec_lib.data import hub_offline, hub_reachable, load_wikitext
from specdec_lib.models.embedded import ensure_embedded_cache
from specdec_study.environment import profiles

HUB_TIMEOUT_S = 5.0
WEIGHT_FILES = ["*.json", "*.safetensors", "tokenizer*", "*.model"]


def hub_models() -> list[str]:
    """Every hub id the profiles name (targets and model: drafts)."""
    ids: list[str] = []
    good, bad = profiles.all_profiles(profiles.PROFILES)
    for why in bad.values():
        print(f"skipping: {why}")
    for prof in good:
        d = prof.get("drafts", {})
        specs = [d.get("transformer", ""), *(d.get("extra_transformers") or [])]
        for name in [
            prof.get("target", ""),
            *(s.split(":", 1)[1] for s in specs if s.startswith("model:")),
        ]:
            if name.count("/") == 1 and not Path(name).exists() and name not in ids:
                ids.append(name)
    return ids


def download_weights() -> int:
    """Fetch every profile's hub weights; the number that failed (one line each)."""
    failed = 0
    for repo in hub_models():
        try:
            path = snapshot_download(
                repo, token=os.environ.get("HF_TOKEN"), allow_patterns=WEIGHT_FILES
            )
            print(f"{repo}: {path}")
        except Exception as e:  # noqa: BLE001 - one line per failure, never the token
            failed += 1
            print(
                f"{repo}: not downloaded ({type(e).__name__}; gated models need HF_TOKEN and "
                "an accepted licence)"
            )
    return failed


def download() -> int:
    """Build the embedded model's cache; where the hub is reachable, fetch the profiles' hub
    weights and the full WikiText-2 too."""
    print(f"embedded model: {ensure_embedded_cache(full_check=True)}")
    if hub_offline() or not hub_reachable(HUB_TIMEOUT_S):
        print(
            "the Hugging Face hub is unreachable from here: skipping the hub weights "
            f"({', '.join(hub_models())}) and the full WikiText-2 dataset; the embedded and smoke "
            "profiles need neither (run `make download` where the hub is reachable, e.g. Colab)"
        )
        return 0
    failed = download_weights()
    try:
        corpus = load_wikitext("datasets")
        print(f"WikiText-2 (datasets): {len(getattr(corpus, 'articles', corpus))} articles")
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"WikiText-2 (datasets): not downloaded ({type(e).__name__}: {e})")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    """`python -m specdec_study.study download` (the study facade's entry)."""
    if argv != ["download"]:
        print("usage: python -m specdec_study.study download")
        return 2
    return download()
