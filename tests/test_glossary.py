"""The glossary defines every draft the book names: each draft name of the embedded profile
(`quant8`, `exit9`, ...), each drafter spec in its profiles and committed bench files
(`tree+shared:16:4`, `int8w:32768`, ...) and each spec written in a chapter's own text. Read from
the sources (the glossary's term lines, the profiles, the bench files' JSON and the chapters'
code spans), so it needs no build."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from specdec_lib.drafters import registry
from specdec_study.reporting.performance import BENCH_RUNS, read_bench

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
PROFILE = ROOT / "profiles" / "embedded.yaml"
NOT_DRAFTS = {"none"}  # the baseline's spec: no draft


def glossary_terms(text: str) -> set[str]:
    """The terms of the MyST glossary block: its unindented, non-empty lines."""
    block = re.search(r"```\{glossary\}\n(.*?)```", text, re.S)
    assert block, "the glossary page has no {glossary} block"
    return {ln.strip() for ln in block.group(1).splitlines() if ln.strip() and ln[0] != " "}


def profile_names(profile: dict) -> set[str]:
    """The draft names an experiment of the profile gives its drafts (`quant8`, `exit9`)."""
    names = set()
    for cfg in (profile.get("experiments") or {}).values():
        drafts = cfg.get("drafts") if isinstance(cfg, dict) else None
        if isinstance(drafts, dict):
            names |= set(drafts)
    return names


def profile_specs(profile: dict) -> set[str]:
    """Every drafter spec the profile runs (its drafts and its experiments' drafts)."""
    specs = {v for v in (profile.get("drafts") or {}).values() if isinstance(v, str)}
    for cfg in (profile.get("experiments") or {}).values():
        drafts = cfg.get("drafts") if isinstance(cfg, dict) else None
        if isinstance(drafts, dict):
            specs |= {v for v in drafts.values() if isinstance(v, str)}
    return specs


def bench_specs() -> set[str]:
    """The specs of every arm in the committed bench runs, and the presets they name."""
    specs = set()
    for name in BENCH_RUNS:
        path = ROOT / "results" / "embedded" / name
        if not path.is_dir():
            continue
        b = read_bench(path)
        for g in b["groups"].values():
            specs |= {str(a.get("draft")) for a in g["arms"].values()}
        specs |= {str(b[k]["name"]) for k in ("best_long", "best_short") if b.get(k)}
    return specs


def chapter_specs() -> set[str]:
    """Code spans of the chapters' text that parse as a drafter spec."""
    found = set()
    for page in (ROOT / "book").glob("*.md"):
        if page == GLOSSARY:
            continue
        prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for span in re.findall(r"`([^`\s]+)`", prose):
            try:
                registry.parse(span)
            except Exception:  # noqa: BLE001 - not a spec: any refusal
                continue
            found.add(span)
    return found


def name_covered(name: str, terms: set[str]) -> bool:
    """A draft name is a term, or one with its number as N (`exit9` -> `exitN`)."""
    return name in terms or re.sub(r"\d+$", "N", name) in terms


def spec_covered(spec: str, terms: set[str]) -> bool:
    """A spec is a term, or its drafter is (`int8w:32768` -> `int8w`; Hugging Face's `hf:MODE`
    as written), or a term names that drafter with its arguments or number (`quant:8:0` ->
    `quant8`, `exit:9` -> `exitN`, `self:18:16384` -> `self-draft`)."""
    if spec in terms:
        return True
    if spec.startswith("hf:"):
        return False
    drafter = registry.parse(spec).name
    return drafter in terms or any(t.startswith(drafter) for t in terms)


def test_the_glossary_defines_every_draft_name_of_the_profile():
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    names = profile_names(yaml.safe_load(PROFILE.read_text(encoding="utf-8")))
    assert {"quant8", "exit9", "noise200"} <= names  # the scan reads the profile's drafts
    assert [n for n in sorted(names) if not name_covered(n, terms)] == []


def test_the_glossary_defines_every_spec_the_results_and_chapters_show():
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    profile = yaml.safe_load(PROFILE.read_text(encoding="utf-8"))
    specs = (profile_specs(profile) | bench_specs() | chapter_specs()) - NOT_DRAFTS
    assert {"tree+shared:16:4", "lookup+shared:3:2", "int8w:32768"} <= specs
    assert [s for s in sorted(specs) if not spec_covered(s, terms)] == []


def test_a_missing_entry_is_found():
    """The check fails where the glossary lacks a draft (planted: terms without int8w)."""
    terms = {"quant8", "exitN", "ngram"}
    assert not spec_covered("int8w:32768", terms) and spec_covered("exit:9", terms)
    assert not name_covered("noise200", terms) and name_covered("exit12", terms)
    assert not spec_covered("hf:greedy", terms) and spec_covered("hf:greedy", {"hf:greedy"})
