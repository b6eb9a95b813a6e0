"""The 95 % t-interval ``compare`` prints beside a bounded metric stays inside the metric's
range: two seeds' val/acc 0.000 and 0.028 (the compare notebook's demo) gave
``[-0.1626, 0.1904]``, an accuracy below zero, in the markdown table and the CSV, and
``--select``'s intervals could leave [0, 1] the same way. Each bound is now cut to the range
(:data:`roformer_lit.results.compare.table.RANGES`), as the study's tables cut theirs."""

from __future__ import annotations

import csv

import pytest

from roformer_lit.results.compare import RunSummary, aggregate, assign_variants, to_csv, to_markdown
from roformer_lit.results.compare.aggregate import METRICS, Stat
from roformer_lit.results.compare.select import REPORT_RANGES, bounded
from roformer_lit.results.compare.table import RANGES, format_stat, interval

#: metric -> two seeds' values whose raw t-interval leaves the metric's range, and the side
CASES = {
    "val_acc": ([0.0, 0.0278], "low"),
    "final_val_loss": ([0.0001, 0.03], "low"),
    "best_val_loss": ([0.0001, 0.03], "low"),
    "val_ppl": ([1.0, 1.3], "low"),
}
HIGH = {"val_acc": [1.0, 0.97]}


def _rows(metric: str, values: list[float]):
    runs = [
        RunSummary(
            path=f"runs/rope-{seed}",
            position="rope",
            attention="softmax",
            seed=seed,
            hparams={"position": "rope", "attention": "softmax", "seed": seed},
            **{"final_val_loss": 1.0, metric: value},
        )
        for seed, value in enumerate(values)
    ]
    return aggregate(assign_variants(runs))


def test_every_bounded_metric_has_a_case() -> None:
    assert set(CASES) == set(RANGES)


@pytest.mark.parametrize("metric", sorted(CASES))
def test_the_interval_stays_in_the_metrics_range(metric) -> None:
    values, side = CASES[metric]
    floor, ceiling = RANGES[metric]
    low, high = interval(Stat.of(values), metric)
    assert floor <= low <= high <= ceiling
    assert (low if side == "low" else high) == (floor if side == "low" else ceiling)
    rows = _rows(metric, values)
    record = next(csv.DictReader(to_csv(rows).splitlines()))
    assert float(record[f"{metric}_ci_low"]) >= floor
    column = METRICS[metric]
    header, _, line = to_markdown(rows).splitlines()[:3]
    cell = line.split(" | ")[header.split(" | ").index(column)]
    assert "[-" not in cell, cell


def test_an_accuracy_interval_is_cut_at_one_too() -> None:
    low, high = interval(Stat.of(HIGH["val_acc"]), "val_acc")
    assert high == 1.0 and low < 1.0
    assert format_stat(Stat.of(HIGH["val_acc"]), 4, True, "val_acc").endswith(", 1.0000]")


def test_an_unbounded_metric_keeps_its_interval() -> None:
    stat = Stat.of([-5.0, 5.0])
    assert interval(stat, "tokens_per_s") == interval(stat)
    assert interval(stat)[0] < -5.0


@pytest.mark.parametrize("metric", sorted(REPORT_RANGES))
def test_select_cuts_its_intervals_to_the_range(metric) -> None:
    floor, ceiling = REPORT_RANGES[metric]
    found = bounded([0.0, 0.0278], floor, ceiling)
    assert found.low == floor and found.high <= ceiling
