"""The performance chapter reads every number from bench.txt: a changed copy of the file changes
the page, the page's own prose types no number, and a file without the bench's JSON line is
refused in one line. Reads the committed results/embedded/bench.txt; no model, no timing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from specdec_lib.errors import SpecdecError
from specdec_lib.reporting import performance as perf

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "results" / "embedded" / perf.BENCH_FILE
PAGE = ROOT / "book" / "performance.md"


def _planted(tmp_path: Path, change) -> Path:
    """A copy of the committed bench.txt whose JSON line went through change(data)."""
    lines = BENCH.read_text(encoding="utf-8").splitlines()
    data = json.loads(lines[-1])
    change(data)
    out = tmp_path / perf.BENCH_FILE
    out.write_text("\n".join([*lines[:-1], json.dumps(data)]) + "\n", encoding="utf-8")
    return out


def test_the_committed_bench_reads_with_every_group_and_the_ceiling():
    b = perf.read_bench(BENCH)
    assert set(b["groups"]) == {"long_c100", "long_c20", "short_c100", "short_c20"}
    assert b["ceiling"]["by_k"] and b["_header"].startswith("`python -m specdec_lib bench")
    page = perf.page_markdown(b)
    best = b["groups"]["long_c100"]["arms"]["best"]["speedup"]
    assert f"{best['value']:.2f}x [{best['ci_low']:.2f}, {best['ci_high']:.2f}], n=10" in page
    assert "Hugging Face" in page and "hf_prompt_lookup_k8" in page


def test_a_changed_bench_file_changes_the_page(tmp_path):
    def change(d):
        long = d["groups"]["long_c100"]["arms"]
        long["best"]["speedup"] = {"value": 9.87, "ci_low": 9.5, "ci_high": 10.25, "n": 10}
        long["tree"]["identical_to_baseline"] = 0.9
        d["groups"]["long_c100"]["arms"]["baseline"]["repetition_4gram"]["median"] = 0.99
        d["ceiling"]["by_k"]["4"]["ceiling"] = 7.77
        d["identity"]["identical_fraction"]["tree"] = 0.5

    committed = perf.read_bench(BENCH)
    tree_ident = committed["groups"]["long_c100"]["arms"]["tree"]["identical_to_baseline"]
    assert tree_ident != 0.9, "the planted identity must differ from the committed one"
    before = perf.page_markdown(committed)
    after = perf.page_markdown(perf.read_bench(_planted(tmp_path, change)))
    assert "9.87x [9.50, 10.25], n=10" in after and "9.87x" not in before
    assert (
        "`long_c100`: 90% of 10 prompts" in after
        and f"`long_c100`: {tree_ident:.0%} of 10" in before
    )
    assert "repetition 0.61-0.99)" in after and "7.77x" not in before
    from specdec_lib.reporting.format import md_cell  # a cell's text is escaped literal text

    assert f"| 4 | {md_cell('7.77x')} |" in after and "ceiling is 7.77x at K = 4" in after
    assert "which rounding does not explain" in after and "rounding does not" not in before


def test_the_chapter_page_types_no_number_and_is_in_the_toc():
    text = PAGE.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text.split("---", 2)[2], flags=re.S)
    # names, not measurements: the column "4-gram repetition" and the intervals' 95% level
    prose = prose.replace("4-gram", "").replace("95%", "")
    assert re.findall(r"\d", prose) == [], "numbers belong to bench.txt, not the page"
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "book/performance" in files


def test_a_file_without_the_bench_line_is_refused_in_one_line(tmp_path):
    bad = tmp_path / perf.BENCH_FILE
    bad.write_text("# a table only\nbaseline 14.4\n", encoding="utf-8")
    with pytest.raises(SpecdecError, match="has no bench JSON line") as e:
        perf.read_bench(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(SpecdecError, match="cannot read"):
        perf.read_bench(tmp_path / "absent.txt")


def test_target_direction_follows_the_file_not_a_list_of_names():
    b = perf.read_bench(BENCH)
    t = perf.targets_table(b).set_index("target")
    assert t.loc["`prediction_agreement`", "threshold"].startswith("<=")
    assert t.loc["`best_vs_hf_best_c100`", "threshold"].startswith(">=")


LOOPFREE = ROOT / "results" / "embedded" / perf.LOOPFREE_FILE


def test_the_loop_free_run_reads_with_its_settings_strata_and_provenance():
    """bench-loopfree.txt: each group's heading names its decoding (from the file), the strata
    table's cells are the file's thirds, and the provenance names that file, not bench.txt."""
    b = perf.read_bench(LOOPFREE)
    assert set(b["groups"]) == {"rp_c100", "t07_c100"}
    arms = perf.arms_markdown(b)
    assert "greedy, repetition control `rp1.2` (rp_c100)" in arms
    assert "sampling at T = 0.7 (t07_c100)" in arms
    assert "128 new tokens (long_c100)" in perf.arms_markdown(perf.read_bench(BENCH))
    strata = perf.strata_table(b)
    assert list(strata["repetition third"]) == ["low", "middle", "high"]
    for _, row in strata.iterrows():
        t = b["repetition_strata"]["thirds"][row["repetition third"]]
        v = t["ours_vs_hf"]
        cell = f"{v['value']:.2f}x [{v['ci_low']:.2f}, {v['ci_high']:.2f}], n={t['n']}"
        assert row["ours x HF's"] == cell
    prov = perf.provenance_markdown(b, perf.LOOPFREE_FILE)
    assert "`bench-loopfree.txt`" in prov and "--groups loopfree" in prov
    assert "`bench.txt`" in perf.provenance_markdown(perf.read_bench(BENCH))


def test_the_loop_free_run_s_numbers_are_claims_that_recompute():
    """Every number of the loop-free file is a claim of its own name that recomputes from it."""
    from specdec_lib.report import load_results
    from specdec_lib.reporting.claims import performance_claims, recompute

    p = load_results("embedded")
    cs = [c for c in performance_claims(p) if c.name.startswith("bench-loopfree: ")]
    key = "bench-loopfree: targets / best_vs_hf_best_t07_c100"
    assert any(c.name.startswith(key) for c in cs), [c.name for c in cs][:5]
    for c in cs:
        assert "bench-loopfree.txt" in c.source
        assert recompute(c, p) == pytest.approx(c.value, nan_ok=True)


def test_each_bench_file_names_its_cpu_kind_and_what_the_presets_resolved_to(tmp_path):
    """The machines table: one row per bench file; a file from before the `cpu` and `presets`
    fields gives the header's CPU numbers and the static table's configurations; a newer file
    its JSON's, escaped (a backtick in a spec or CPU name cannot break the table)."""
    committed = perf.bench_files(BENCH.parent)
    assert {perf.BENCH_FILE, perf.LOOPFREE_FILE} <= set(committed)
    old = perf.bench_cpu(committed[perf.BENCH_FILE])
    assert (old["family"], old["model"]) == (6, 167)
    row = perf.machines_table({perf.BENCH_FILE: committed[perf.BENCH_FILE]}).iloc[0]
    assert "`ngram`, K = 7 (static table)" == row["best"]
    best = committed[perf.BENCH_FILE]["groups"]["long_c100"]["arms"]["best"]["speedup"]
    assert f"`long_c100` {best['value']:.2f}x" in row["best x our baseline"]

    def change(d):
        d["cpu"] = {
            "vendor": "AuthenticAMD",
            "family": 25,
            "model": 1,
            "model_name": "EPYC`x",
            "flags": ["avx2"],
            "cores": 2,
        }
        d["dtype"] = "float32"
        cal = {"chosen": {"spec": "int8w:32768", "k": 4, "speedup": 1.96}, "n_prompts": 1}
        d["presets"] = {
            "best": {"draft": "int8w:32768", "k": 4, "source": "calibration", "calibration": cal},
            "best_short": {"draft": "look`up", "k": 4, "source": "fallback"},
        }
        d["best_long"] = {"name": "best", "draft": "int8w:32768", "k": 4}

    new = perf.read_bench(_planted(tmp_path, change))
    row = perf.machines_table({"bench-epyc.txt": new}).iloc[0]
    assert "family 25 model 1" in row["CPU kind"] and row["dtype"] == "float32"
    assert row["best"] == "`int8w:32768`, K = 4 (calibration: 1.96x over our baseline, n=1)"
    assert row["best_short"].startswith("``look`up``, K = 4 (static table)")
    from specdec_lib.reporting.format import md_table

    table = md_table(perf.machines_table({"bench-epyc.txt": new}))
    listed = perf.machines_markdown(
        {"bench-epyc.txt": new, perf.BENCH_FILE: committed[perf.BENCH_FILE]}
    )
    assert len(listed.splitlines()) == 2  # one line per CPU kind and dtype
    both = perf.machines_markdown(committed)  # the committed files: one kind, both files
    assert len(both.splitlines()) == 1 and "`bench.txt`" in both and "`bench-loopfree.txt`" in both
    for text in (table, listed):  # the CPU's name is literal text, the spec a whole code span
        assert "EPYC&#96;x" in text and "EPYC`x" not in text
        assert "``look`up``" in text
