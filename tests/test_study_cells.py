"""The seed-study cells behind the generated study pages, in both directions of a metric:
accuracy (higher is better) and MLM loss (lower is better)."""

from __future__ import annotations

import pytest

from roformer_lit.results.study.seed_study import SeedStudy

#: Eight seeds: the exact sign-flip test's floor 2/2**8 survives Holm over the four cells
#: (five seeds cannot go below p = 0.0625, so they separate nothing).
SEEDS = range(8)
NOISE = [0.01, -0.02, 0.0, 0.015, -0.005, 0.007, -0.012, 0.003]


def _study(metric: str, better: float, worse: float, baseline: float) -> SeedStudy:
    """``good`` sits at ``better`` on every seed, ``bad`` at ``worse``, the reference between."""
    study = SeedStudy([8, 16], "reference", metric=metric)
    middle = (better + worse) / 2
    for n in study.lengths:
        for name, level in (("reference", middle), ("good", better), ("bad", worse)):
            study.cells[("task", name, n, metric)] = {s: level + NOISE[s] for s in SEEDS}
        study.baselines[("task", "rule", n)] = baseline
    study.order["task"] = ["reference", "good", "bad"]
    return study


@pytest.mark.parametrize(
    "metric,better,worse,baseline", [("acc", 0.9, 0.3, 0.5), ("loss", 2.0, 6.0, 4.0)]
)
def test_better_is_read_in_the_metrics_direction(metric, better, worse, baseline):
    study = _study(metric, better, worse, baseline)
    assert study.above_baseline("task", "good", 8)
    assert not study.above_baseline("task", "bad", 8)
    assert study.separated("task", above=metric == "acc") == [
        f"`good` at {study.times(n)}" for n in study.lengths
    ]
    worse_side = study.separated("task", above=metric == "loss")
    assert worse_side == [f"`bad` at {study.times(n)}" for n in study.lengths]
    findings = study.findings()
    if metric == "loss":
        assert "separated lower (better): `good` at n=8 (1×) and `good` at n=16 (2×)" in findings
        assert "higher (worse): `bad` at n=8 (1×) and `bad` at n=16 (2×)" in findings
        assert "solved" not in study.table()
    else:
        assert "separated above it: `good` at n=8 (1×) and `good` at n=16 (2×)" in findings


def test_the_best_baseline_is_the_lowest_loss_and_the_highest_accuracy():
    for metric, pick in (("acc", 0.7), ("loss", 0.2)):
        study = SeedStudy([8], "reference", metric=metric)
        study.baselines.update({("task", "a", 8): 0.2, ("task", "b", 8): 0.7})
        assert study.best_baseline("task", 8)[1] == pick


def test_five_seeds_separate_nothing_and_the_findings_say_so():
    """The same gap on five seeds: the exact test's floor 0.0625 is above 0.05, so no cell is
    separated and the findings say that is no evidence either way."""
    study = _study("acc", 0.9, 0.3, 0.5)
    for key in list(study.cells):
        study.cells[key] = {s: v for s, v in study.cells[key].items() if s < 5}
    assert study.separated("task", above=True) == [] == study.separated("task", above=False)
    findings = study.findings()
    assert "cannot go below p = 0.0625 with 5 seeds" in findings
    assert "no evidence either way" in findings
    assert "4 of 4 cells have every seed's difference on one side" in findings
