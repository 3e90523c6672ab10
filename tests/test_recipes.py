"""The recipes in CONTRIBUTING.md, followed step by step with toy material: each says how to add
one thing and that it takes the files it names, no more. The toy drafter is one module and one
registry entry; the toy experiment is one module written into the `specdec_study.experiments`
package's path, which the catalog finds: it reaches the catalog, the runner, the readings, its
figure, the notebook generator and results/SCHEMA.md with no other edit, and runs in a profile
that names it not with its declared defaults."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import VOCAB, random_prompt, stepwise_greedy

from specdec_lib import ROOT
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.drafters import registry
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_study.environment.profiles import load_profile, validate
from specdec_study.results import catalog, schema_page
from specdec_study.results.declare import Experiment

# Step 1 of "Add a drafter in one file": the module, with its drafter class and its builder.
TOY_DRAFTER = '''"""A toy drafter: guesses that the last token repeats."""

from __future__ import annotations

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.registry import DraftContext


class RepeatDrafter(Drafter):
    """Proposes the last token `n` times (fewer when K is smaller)."""

    name = "repeat"

    def __init__(self, n: int):
        self.n = n

    def propose(self, seq, k, sampling, generator) -> Draft:
        return Draft([seq[-1]] * min(k, self.n))


def build(args: tuple[int], ctx: DraftContext) -> RepeatDrafter:
    """`repeat[:N]`: the last token N times."""
    return RepeatDrafter(args[0])
'''


def _repeat_args(rest: str) -> tuple[int, ...]:
    return registry.ints(rest, 1) or (2,)


def test_drafter_recipe_adds_a_drafter_in_one_file(tmp_path, monkeypatch, target64):
    (tmp_path / "toy_repeat.py").write_text(TOY_DRAFTER)  # step 1: the module
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "toy_repeat", raising=False)
    entry = registry.Entry("repeat", ("repeat[:N]",), _repeat_args, "toy_repeat:build")
    monkeypatch.setitem(registry.REGISTRY, "repeat", entry)  # step 2: its entry in the table

    # the grammar knows it (errors list it, adaptive wraps it) without importing its module
    assert registry.parse("repeat").args == (2,) and registry.parse("repeat:3").args == (3,)
    assert "repeat[:N]" in registry.valid_forms()
    assert registry.parse("adaptive:repeat:3").args == (None, None, "repeat:3")
    with pytest.raises(SpecdecError, match=r"'repeat:x'.*repeat\[:N\]"):
        registry.parse("repeat:x")
    assert "toy_repeat" not in sys.modules

    # it builds for a target and decodes losslessly: the same tokens as greedy decoding
    loaded = LoadedModel(target64, None, "tiny", torch.float64, torch.device("cpu"), VOCAB)
    ctx = registry.DraftContext(loaded, lambda: [], k=4)
    drafter = registry.build("repeat:3", ctx)
    assert type(drafter).__name__ == "RepeatDrafter" and drafter.n == 3
    assert isinstance(registry.build("adaptive:repeat", ctx), AdaptiveDrafter)
    prompt = random_prompt(5, 8)
    out = speculative_decode(CachedLM(target64), drafter, prompt, k=4, max_new_tokens=12)
    assert out.tokens == stepwise_greedy(target64, prompt, 12)
    assert out.stats.proposed > 0


# ------------------------------------------------------------------------ experiments and figures

TOY_CAPTION = "Toy bars: one per arm; look at nothing in particular."


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_notebooks", ROOT / "notebooks/make_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", [e for e in catalog.EXPERIMENTS])
def test_every_declared_figure_is_a_png_with_a_drawing_and_a_caption(name):
    """Each declared figure carries its drawing and caption, and each file is declared once per
    experiment."""
    e = catalog.experiment(name)
    files = [f.file for f in e.figures]
    assert len(files) == len(set(files)), name
    for f in e.figures:
        assert f.file.endswith(".png") and callable(f.draw) and f.caption, (name, f.file)


@pytest.mark.parametrize("name", [e for e in catalog.EXPERIMENTS])
def test_every_declared_default_section_fits_the_profile_schema(name):
    """An experiment's declared defaults (the section of a profile that names it not) are
    checked as a profile's section is."""
    defaults = catalog.experiment(name).defaults
    if defaults is not None:
        validate({**load_profile("smoke"), "experiments": {name: defaults}}, f"{name}'s defaults")


# ------------------------------------------------- an experiment as one module (issue 40 design)

# The whole toy experiment, one file in the `specdec_study.experiments` package: its shapes,
# config and run (functions of the `runner.lab.Lab` the runner hands them), its figure with its
# drawing, its reading's headline, its declaration and its notebook. Nothing else is edited to
# add it.
TOY_MODULE = f'''"""A toy experiment in one module."""

from __future__ import annotations

from typing import Any, TypedDict

from specdec_study.reporting.number_format import fmt
from specdec_study.results.declare import Experiment, Figure, Notebook


class ToyConfig(TypedDict):
    experiment: str
    n_prompts: int


def config(lab: Any) -> dict[str, Any]:
    return {{"experiment": "toy", "n_prompts": int(lab.section()["n_prompts"])}}


def run(lab: Any) -> Any:
    raise AssertionError("not run in the recipe test: it would load a model")


def bars(summary: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
    """Toy bars, one per row."""
    from specdec_study.reporting.figures import new_figure

    fig, (ax,) = new_figure()
    ax.bar([r["method"] for r in rows], [r["wall_s"] for r in rows])
    return fig


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    return [f"the toy ran on {{fmt(config.get('n_prompts'), 'n')}} prompts"]


toy = Experiment(
    "toy",
    "a toy experiment in one module",
    schema="`n_prompts`: the toy's one key.",
    defaults={{"n_prompts": 1}},
    config_shape=ToyConfig,
    figures=(Figure("toy_bars.png", {TOY_CAPTION!r}, draw=bars),),
    build_config=config,
    run=run,
    headline=reading_headline,  # the reading's headline lines (optional; so is showed=)
)
NOTEBOOK = Notebook("08_toy", "Toy", "A toy notebook. Writes `toy/`.", (toy,))
'''


def test_experiment_module_recipe_one_file_reaches_catalog_runner_figures_and_notebooks(
    monkeypatch, tmp_path: Path
):
    """Add an experiment as one module of `specdec_study.experiments`: the catalog finds it (no
    list names it), its notebook joins the study in the order of its name, the runner binds its
    config and run to a Lab, its figure is drawn from its declaration and captioned, and the
    notebook generator writes its cell. The test's only other step is to rebuild `STUDY`,
    what importing the catalog does."""
    from specdec_study import experiments
    from specdec_study.reporting import readings
    from specdec_study.reporting.figures import declared
    from specdec_study.results.schema import config_problem
    from specdec_study.results.store import ResultStore, publish
    from specdec_study.runner.experiments import bound
    from specdec_study.runner.session import Session

    (tmp_path / "toy.py").write_text(TOY_MODULE)  # the one file
    monkeypatch.setattr(experiments, "__path__", [*experiments.__path__, str(tmp_path)])
    # forgotten afterwards: the module, and the package's attribute the import sets
    monkeypatch.setitem(sys.modules, "specdec_study.experiments.toy", None)
    monkeypatch.delitem(sys.modules, "specdec_study.experiments.toy")
    monkeypatch.setattr(experiments, "toy", None, raising=False)
    monkeypatch.delattr(experiments, "toy")
    found = catalog.discovered()
    assert "08_toy" in [nb.name for nb in found]  # found in module-name order: toy.py among them
    monkeypatch.setattr(catalog, "STUDY", catalog.ordered(found))
    assert [nb.name for nb in catalog.STUDY][-1] == "08_toy"
    assert list(catalog.declared())[-1] == "toy" and catalog.notebook_of("toy") == "08_toy"
    toy = catalog.experiment("toy")

    # the runner binds its config to a Lab: the declared defaults, a profile's section over them
    smoke = load_profile("smoke")
    config = bound(toy).config
    assert config(Session(smoke, ROOT / "results")) == {"experiment": "toy", "n_prompts": 1}
    smoke["experiments"]["toy"] = {"n_prompts": 3}
    assert config(Session(smoke, ROOT / "results")) == {"experiment": "toy", "n_prompts": 3}
    assert config_problem("toy", {"experiment": "toy"}) == "config.json has no 'n_prompts'"
    assert readings.what("toy") == toy.what
    cfg = {"profile": "p", "target": "t", "n_prompts": 1, "max_new_tokens": 2}
    assert toy.what in readings.what_was_run({"experiment": "toy"}, cfg, {})
    # its defaults pass the profiles' schema (a new kind of key needs its type there)
    validate({**load_profile("smoke"), "experiments": {"toy": toy.defaults}}, "the toy's defaults")

    # its figure is drawn from its declaration into the result directory, and captioned
    rows = [{"method": "baseline", "wall_s": 1.0}, {"method": "toy", "wall_s": 0.5}]
    summary = {"experiment": "toy", "profile": "p"}
    path = publish(
        ResultStore(tmp_path, "p"), "toy", {"experiment": "toy", "n_prompts": 1},
        {"device": "cpu"}, rows, summary, lambda d: declared.draw("toy", summary, rows, d),
    )  # fmt: skip
    assert readings.figures(path) == [(path / "figures" / "toy_bars.png", TOY_CAPTION)]
    assert readings.captions()["toy_bars"] == TOY_CAPTION
    assert declared.alt_text("toy_bars.png", ["toy"]) == "Toy bars, one per row."
    # its reading's headline is its declaration's; without showed=, no "What it showed" line
    assert "**Headline** (point estimate [95% interval]):\n\n- the toy ran on 1 prompts" in (
        readings.reading(path)
    )
    assert readings.showed(summary) is None

    nb = _generator().build(toy_notebook := catalog.STUDY[-1])
    assert toy_notebook.experiments == (toy,)
    assert "# 08. Toy" in nb.cells[0].source and "A toy notebook." in nb.cells[0].source
    assert nb.cells[-2].source == (
        'result = study.run(study_run, "toy")\nstudy.display_result(study_run, "toy")'
    )
    assert "study.write_bundle(study_run)" in nb.cells[-1].source  # every notebook ends so

    # and results/SCHEMA.md's generated parts (what `make notebooks` writes) describe it
    page = schema_page.fill((ROOT / "results/SCHEMA.md").read_text(encoding="utf-8"), catalog.STUDY)
    assert "| `08_toy` | `toy` |" in page
    assert "### toy\n`n_prompts`: the toy's one key.\nFigures: `toy_bars.png`." in page


def test_schema_page_refuses_a_page_without_its_generated_parts():
    """results/SCHEMA.md without its markers is one line of error, not a page half written."""
    with pytest.raises(SpecdecError, match="no single generated 'notebooks' part"):
        schema_page.fill("# Result files\n", catalog.STUDY)


def test_every_experiment_module_leads_or_joins_one_notebook():
    """Each declaration an experiment module holds is run by exactly one study notebook, and
    each module-declared experiment carries its config, run and drawings."""
    declared = {e.name for _, e in catalog.declared().values()}
    for module in catalog.modules():
        own = [v for v in vars(module).values() if isinstance(v, Experiment)]
        if module.__name__.endswith(".quick"):  # the quick notebook: 04's experiments, not its own
            assert not own and {e.name for e in module.QUICK.experiments} <= declared
            continue
        assert own, f"{module.__name__} declares no experiment"
        for e in own:
            assert e.name in declared, f"{module.__name__}: {e.name} is in no notebook"
            assert e.run and e.build_config, e.name
            assert all(f.draw for f in e.figures), e.name
