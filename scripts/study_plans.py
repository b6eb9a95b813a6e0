"""The layer-plan study: the regions ``plans-*`` of ``docs/studies/layer-plans.md``
(written by ``scripts/study_pages.py``).

Runs: ``configs/sweeps/study_plans.yaml`` (four layer plans of a three-layer RoPE encoder ×
task × seeds 0-4, 1,500 steps), one task at a time with ``sweep --only data.probe=TASK``.
Raw outputs read: :data:`TEST_FILES` in ``docs/bench/``, ``extrapolate --split test --csv``
of every run's last checkpoint with the task's ``baseline:<rule>`` rows on the same
sequences. Each plan is compared with all-global RoPE (no plan) by seed
(:class:`study_cells.SeedStudy`).

The ``recall`` slice (regions ``plans-recall-*``) is its own sweep,
``configs/sweeps/study_plans_recall.yaml`` (the same four plans on ``recall`` with 256
symbols, trained at 4-8 key-value pairs, 4,000 steps), read from :data:`RECALL_FILE` at
:data:`RECALL_LENGTHS` pairs; it is its own Holm family.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from study_cells import Parse, SeedStudy, read_test_csv, run_pattern

BENCH = Path(__file__).resolve().parent.parent / "docs" / "bench"
TEST_FILES = "cpu-study-plans-{task}.csv"
TASKS = ["copy", "reverse", "sort", "odds_first"]
LENGTHS = [16, 32, 64, 128, 256]
#: run-name plan label (:func:`roformer_lit.layer_plan.plan_label`) -> what the page calls it
PLANS = {
    "layer_plan=none": "all-global RoPE",
    "global.base160000.0-local8x2": "ModernBERT: global (base 160 K), local ×2",
    "global.nope-local8x2": "iRoPE: global NoPE, local RoPE ×2",
    "local8": "all-local",
}
RUN = run_pattern("study_plans", r"(?P<plan>.+?)", TASKS)
RECALL_FILE = "cpu-study-plans-recall.csv"
RECALL_LENGTHS = [8, 16, 32, 64, 128]
RECALL_RUN = re.compile(r"study_plans_recall/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")


def _parse(name: str) -> tuple[str, str, int] | None:
    match = RUN.search(name)
    if match is None or match["plan"] not in PLANS:
        return None
    return match["task"], PLANS[match["plan"]], int(match["seed"])


def _parse_recall(name: str) -> tuple[str, str, int] | None:
    match = RECALL_RUN.search(name)
    if match is None or match["plan"] not in PLANS:
        return None
    return "recall", PLANS[match["plan"]], int(match["seed"])


def _study(lengths: list[int], files: dict[str, str], parse: Parse) -> SeedStudy:
    """The plans against all-global RoPE over the tasks whose ``files[task]`` exist."""
    result = SeedStudy(lengths, PLANS["layer_plan=none"])
    for task, name in files.items():
        path = BENCH / name
        if path.is_file():
            cells, baselines = read_test_csv(path, parse)
            result.cells.update(cells)
            result.baselines.update(baselines)
            result.order[task] = list(PLANS.values())
    return result


@functools.cache
def study() -> SeedStudy:
    """The four position tasks (regions ``plans-*``)."""
    return _study(LENGTHS, {t: TEST_FILES.format(task=t) for t in TASKS}, _parse)


@functools.cache
def recall_study() -> SeedStudy:
    """``recall`` at longer contexts (regions ``plans-recall-*``), its own Holm family."""
    return _study(RECALL_LENGTHS, {"recall": RECALL_FILE}, _parse_recall)
