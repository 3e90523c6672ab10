"""The performance chapter reads every number from a bench run's folder: a changed copy of its
summary.json changes the page, the page's own prose types no number, and a missing or damaged
folder is refused in one line. Reads the committed results/embedded/bench/; no model, no
timing."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from specdec_lib.errors import SpecdecError
from specdec_study.bench.record import FILES, LOG
from specdec_study.reporting import performance as perf

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "results" / "embedded" / perf.BENCH_RUN
PAGE = ROOT / "book" / "performance.md"


def _planted(tmp_path: Path, change) -> Path:
    """A copy of the committed bench folder whose summary.json went through change(data)."""
    out = tmp_path / perf.BENCH_RUN
    shutil.copytree(BENCH, out)
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    change(data)
    (out / "summary.json").write_text(json.dumps(data), encoding="utf-8")
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
    from specdec_study.reporting.format import md_cell  # a cell's text is escaped literal text

    assert f"| 4 | {md_cell('7.77x')} |" in after and "ceiling is 7.77x at K = 4" in after
    assert "which rounding does not explain" in after and "rounding does not" not in before


def test_the_chapter_page_types_no_number_and_is_in_the_toc():
    text = PAGE.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text.split("---", 2)[2], flags=re.S)
    # names, not measurements: the column "4-gram repetition" and the intervals' 95% level
    prose = prose.replace("4-gram", "").replace("95%", "")
    assert re.findall(r"\d", prose) == [], "numbers belong to the bench run, not the page"
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "book/performance" in files


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda d: shutil.rmtree(d), "no bench folder"),
        (lambda d: (d / "summary.json").unlink(), "cannot read"),
        (lambda d: (d / "env.json").unlink(), "cannot read"),
        (lambda d: (d / "config.json").write_text("[1]", encoding="utf-8"), "not a JSON object"),
        (lambda d: (d / "summary.json").write_text('{"groups": ', encoding="utf-8"), "not JSON"),
        (lambda d: (d / "summary.json").write_text('{"bench": 1}', encoding="utf-8"), "no bench"),
    ],
)
def test_a_missing_or_damaged_bench_folder_is_refused_in_one_line(tmp_path, damage, said):
    folder = tmp_path / perf.BENCH_RUN
    shutil.copytree(BENCH, folder)
    assert perf.read_bench(folder)["groups"]  # whole before the damage
    damage(folder)
    with pytest.raises(SpecdecError, match=said) as e:
        perf.read_bench(folder)
    assert "\n" not in str(e.value) and str(folder) in str(e.value)


def test_the_committed_runs_are_the_printed_files_in_the_result_layout():
    """Each committed run's folder holds the four files; its header is bench.log's first line
    and its config names the groups and settings its summary ran."""
    for run in perf.BENCH_RUNS:
        folder = BENCH.parent / run
        assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
        b = perf.read_bench(folder)
        log = (folder / LOG).read_text(encoding="utf-8").splitlines()
        assert log[0] == f"# {b['_header']}" and any(ln.startswith("group ") for ln in log)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        assert config["groups"] == b["groups_run"] and config["ks"] == b["ks"]
        assert (config["n_prompts"], config["contexts"]) == (b["n_prompts"], b["contexts"])


def test_target_direction_follows_the_file_not_a_list_of_names():
    b = perf.read_bench(BENCH)
    t = perf.targets_table(b).set_index("target")
    assert t.loc["`prediction_agreement`", "threshold"].startswith("<=")
    assert t.loc["`best_vs_hf_best_c100`", "threshold"].startswith(">=")


LOOPFREE = ROOT / "results" / "embedded" / perf.LOOPFREE_RUN


def test_the_loop_free_run_reads_with_its_settings_strata_and_provenance():
    """bench-loopfree/: each group's heading names its decoding (from the run), the strata
    table's cells are the run's thirds, and the provenance names that run, not bench/."""
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
    prov = perf.provenance_markdown(b, perf.LOOPFREE_RUN)
    assert "`bench-loopfree/`" in prov and "--groups loopfree" in prov
    assert "`bench/`" in perf.provenance_markdown(perf.read_bench(BENCH))


def test_the_loop_free_run_s_numbers_are_claims_that_recompute():
    """Every number of the loop-free run is a claim of its own name that recomputes from it."""
    from specdec_study.pages import load_results
    from specdec_study.reporting.claims import performance_claims, recompute

    p = load_results("embedded")
    cs = [c for c in performance_claims(p) if c.name.startswith("bench-loopfree: ")]
    key = "bench-loopfree: targets / best_vs_hf_best_t07_c100"
    assert any(c.name.startswith(key) for c in cs), [c.name for c in cs][:5]
    for c in cs:
        assert c.source.endswith("/bench-loopfree/summary.json")
        assert recompute(c, p) == pytest.approx(c.value, nan_ok=True)


def test_each_bench_run_names_its_cpu_kind_and_what_the_presets_resolved_to(tmp_path):
    """The machines table: one row per bench run; a run from before the `cpu` and `presets`
    fields gives the header's CPU numbers and the static table's configurations; a newer run
    its summary's, escaped (a backtick in a spec or CPU name cannot break the table)."""
    committed = perf.bench_dirs(BENCH.parent)
    assert {perf.BENCH_RUN, perf.LOOPFREE_RUN} <= set(committed)
    old = perf.bench_cpu(committed[perf.BENCH_RUN])
    assert (old["family"], old["model"]) == (6, 167)
    row = perf.machines_table({perf.BENCH_RUN: committed[perf.BENCH_RUN]}).iloc[0]
    assert "`ngram`, K = 7 (static table)" == row["best"]
    best = committed[perf.BENCH_RUN]["groups"]["long_c100"]["arms"]["best"]["speedup"]
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
    row = perf.machines_table({"bench-epyc": new}).iloc[0]
    assert "family 25 model 1" in row["CPU kind"] and row["dtype"] == "float32"
    assert row["best"] == "`int8w:32768`, K = 4 (calibrated)"
    assert row["best_short"].startswith("``look`up``, K = 4 (static table)")
    from specdec_study.reporting.format import md_table

    table = md_table(perf.machines_table({"bench-epyc": new}))
    listed = perf.machines_markdown({"bench-epyc": new, perf.BENCH_RUN: committed[perf.BENCH_RUN]})
    assert len(listed.splitlines()) == 2  # one line per CPU kind
    amx = {r: committed[r] for r in (perf.BENCH_RUN, perf.LOOPFREE_RUN)}
    both = perf.machines_markdown(amx)  # the AMX Xeon's runs: one kind, both runs
    assert len(both.splitlines()) == 1 and "`bench`" in both and "`bench-loopfree`" in both
    # our baseline over HF greedy, from the run that measured it (the loop-free run did not)
    got = committed[perf.BENCH_RUN]["targets"]["baseline_vs_hf_greedy_c100"]["value"]
    ratio = perf.baseline_vs_hf(committed[perf.BENCH_RUN])
    assert ratio.startswith(f"{got:.2f}x [") and ratio.endswith(", n=10")
    assert perf.baseline_vs_hf(committed[perf.LOOPFREE_RUN]) is None
    assert both.endswith(f"our baseline x HF greedy {ratio}")  # one run measured it: no name
    every = perf.machines_markdown(committed)  # one line per CPU kind, each dtype in it
    kinds = {perf.cpu_text(b) for b in committed.values()}
    assert len(every.splitlines()) == len(kinds)
    for b in committed.values():
        line = next(x for x in every.splitlines() if x.startswith(f"- {perf.cpu_text(b)}:"))
        assert f"{b['dtype']} (" in line
    for text in (table, listed):  # the CPU's name is literal text, the spec a whole code span
        assert "EPYC&#96;x" in text and "EPYC`x" not in text
        assert "``look`up``" in text
