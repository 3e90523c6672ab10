"""A role (bigram, transformer, ...) is recorded profile-wide, so an experiment's record can
name an arm that never ran in it (the context sweep records transformer -> self and runs quant8
and distilled). Every lookup must answer with an arm of that experiment or nothing, and the
earlier-format table must show the sweep's own drafts."""

from __future__ import annotations

from specdec_study import pages as R
from specdec_study.results.read import experiment_arms, role_arm

ROLES = ("bigram", "ngram", "transformer")


def test_a_role_never_names_an_arm_its_experiment_did_not_run():
    """Planted bug (the one the paradox review found): role_arm returning the profile-wide
    record ('self') for the context sweep, whose arms are baseline, distilled and quant8."""
    p = R.load_results("embedded")
    assert p.results, "the committed embedded results are needed"
    for name, res in p.results.items():
        for role in ROLES:
            arm = role_arm(res, role)
            assert arm is None or arm in experiment_arms(res), (name, role, arm)
    sweep = p.get("context_sweep")
    assert experiment_arms(sweep) == ["baseline", "distilled", "quant8"]
    assert role_arm(sweep, "transformer") is None


def test_the_earlier_format_table_shows_the_sweeps_drafts():
    p = R.load_results("embedded")
    t = R.study_table(p)
    drafts = {s for s in t["strategy"] if s.startswith("transformer draft")}
    assert drafts == {"transformer draft (quant8)", "transformer draft (distilled)"}
    assert (t["strategy"] == "transformer draft (quant8)").sum() == 4  # one row per context
