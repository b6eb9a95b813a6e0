"""The hybrid result tested where it matters: regions ``hybrid-*`` of
``docs/studies/layer-plans.md`` (written by ``scripts/study_pages.py``).

All on ``recall`` in the setting all-global RoPE learns at 1× (32 symbols, trained at 2-4
key-value pairs, 4,000 steps: ``configs/sweeps/study_plans_recall_short.yaml``), whose runs
of all-global RoPE and of the NoPE global layer first and last are read from
:data:`~.plans.RECALL_SHORT_FILE` (the sweeps below share its settings and seeds, so they
are the same runs):

* **placement** (``hybrid-placement-*``): ``study_plans_recall_placement.yaml`` adds the NoPE
  layer in the middle, the 1:3 interleave (three local layers, one global: 4 layers), the
  RoPE-global-last control at the local base, and windows of 2 tokens; one Holm family
  against all-global RoPE (:data:`PLACEMENT_FILE`);
* **ten seeds** (``hybrid-seeds-*``): all-global RoPE and the NoPE layer last at seeds 0-9
  (seeds 5-9: ``study_plans_recall_seeds.yaml``, :data:`SEEDS_FILE`), where the exact
  sign-flip test can reach p = 2 / 2**10;
* **data seeds** (``hybrid-data-*``): the same two plans at ``seed_everything`` 0 and
  ``data.seed`` 0-5 (1-5: ``study_plans_recall_data_seeds.yaml``, :data:`DATA_SEEDS_FILE`):
  each data seed draws its own training stream and test set, the two plans of one data
  seed share them (paired by data seed); the baselines are their mean over the six test
  sets;
* **16×** (``hybrid-long``): ``study_plans_recall_long.yaml``, 128 symbols (64 keys) to 64
  pairs, 16,000 steps, one seed per plan (:data:`LONG_FILE`): a pilot, no test.
"""

from __future__ import annotations

import re

from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.plans import (
    RECALL_SHORT_FILE,
    RECALL_SHORT_LENGTHS,
    RECALL_SHORT_PLANS,
    RECALL_SHORT_RUN,
    RECALL_SHORT_SYMBOLS,
    plan_called,
)
from roformer_lit.results.study.present import add_present
from roformer_lit.results.study.seed_study import Parse, SeedStudy, merge_file, read_test_csv
from roformer_lit.results.study.words import NOT_RUN, SOLVED

REFERENCE = RECALL_SHORT_PLANS["layer_plan=none"]
FIRST = RECALL_SHORT_PLANS["global.nope-local8x2"]
LAST = RECALL_SHORT_PLANS["local8x2-global.nope"]

PLACEMENT_FILE = "cpu-study-plans-recall-placement.csv"
PLACEMENT_RUN = re.compile(r"study_plans_recall_placement/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
#: the placement sweep's run-name plan labels -> what the page calls them
PLACEMENT_PLANS = {
    "num_layers3-local8-global.nope-local8": "local RoPE, global NoPE *middle*, local RoPE",
    "num_layers4-local8x3-global.nope": "1:3 interleave: local RoPE ×3, global NoPE (4 layers)",
    "num_layers3-local8x2-global.rope": "control: local RoPE ×2, global *RoPE* last (base 10 K)",
    "num_layers3-local2x2-global.nope": "window 2: local RoPE ×2, global NoPE last",
    "num_layers3-local2x2-global.rope": "window 2: local RoPE ×2, global RoPE last",
}
SEEDS_FILE = "cpu-study-plans-recall-seeds.csv"
SEEDS_RUN = re.compile(r"study_plans_recall_seeds/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
DATA_SEEDS_FILE = "cpu-study-plans-recall-data-seeds.csv"
DATA_SEEDS_RUN = re.compile(
    r"study_plans_recall_data_seeds/(?P<plan>.+?)-dataseed(?P<seed>\d+)(?:/|$)"
)
#: data.seed of every run of study_plans_recall_short.yaml
SHORT_DATA_SEED = 0
LONG_FILE = "cpu-study-plans-recall-long.csv"
LONG_RUN = re.compile(r"study_plans_recall_long/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
LONG_LENGTHS = [4, 8, 16, 32, 64]
LONG_SYMBOLS = 128
TWO = {"layer_plan=none": REFERENCE, "local8x2-global.nope": LAST}


def _parser(pattern: re.Pattern[str], plans: dict[str, str], only_seed: int | None = None) -> Parse:
    def parse(name: str) -> tuple[str, str, int] | None:
        match = pattern.search(name)
        called = None if match is None else plan_called(plans, match["plan"])
        if called is None or (only_seed is not None and int(match["seed"]) != only_seed):
            return None
        return "recall", called, int(match["seed"])

    return parse


def _merge(study: SeedStudy, file_name: str, parse: Parse) -> bool:
    """:func:`~.seed_study.merge_file` of a raw output in ``docs/bench/``."""
    return merge_file(study, bench_file(file_name), parse)


def _short(plans: dict[str, str], only_seed: int | None = None) -> SeedStudy:
    """The recall_short runs of ``plans`` as a study against all-global RoPE."""
    study = SeedStudy(RECALL_SHORT_LENGTHS, REFERENCE)
    _merge(study, RECALL_SHORT_FILE, _parser(RECALL_SHORT_RUN, plans, only_seed))
    return study


@cached
def placement_study() -> SeedStudy:
    """All-global RoPE, the NoPE layer first and last, and the placement sweep's plans."""
    study = _short(
        {"layer_plan=none": REFERENCE, "global.nope-local8x2": FIRST, "local8x2-global.nope": LAST}
    )
    if _merge(study, PLACEMENT_FILE, _parser(PLACEMENT_RUN, PLACEMENT_PLANS)):
        study.order["recall"] = [REFERENCE, FIRST, LAST, *PLACEMENT_PLANS.values()]
        add_present(study.baselines, RECALL_SHORT_SYMBOLS, RECALL_SHORT_LENGTHS, PLACEMENT_FILE)
    return study


@cached
def seeds_study() -> SeedStudy:
    """All-global RoPE and the NoPE layer last at seeds 0-9."""
    study = _short(TWO)
    if _merge(study, SEEDS_FILE, _parser(SEEDS_RUN, TWO)):
        study.order["recall"] = [REFERENCE, LAST]
        add_present(study.baselines, RECALL_SHORT_SYMBOLS, RECALL_SHORT_LENGTHS, SEEDS_FILE)
    return study


@cached
def data_seeds_study() -> SeedStudy:
    """The two plans by data seed (0: recall_short's seed-0 runs; 1-5: their own sweep),
    paired by data seed; baselines the mean over the six test sets."""
    study = _short(TWO, only_seed=0)
    path = bench_file(DATA_SEEDS_FILE)
    if not study.cells or not path.is_file():
        return SeedStudy(RECALL_SHORT_LENGTHS, REFERENCE)
    # recall_short's seed-0 runs are data seed 0: rekey them, then add data seeds 1-5
    study.cells = {
        key: {SHORT_DATA_SEED: by_seed[0]} for key, by_seed in study.cells.items() if 0 in by_seed
    }
    cells, baselines = read_test_csv(path, _parser(DATA_SEEDS_RUN, TWO))
    seeds = {s for by_seed in cells.values() for s in by_seed}
    for key, by_seed in cells.items():
        study.cells.setdefault(key, {}).update(by_seed)
    # the file's baselines are the mean over its own test sets: weigh in data seed 0's
    study.baselines = {
        key: (value * len(seeds) + study.baselines[key]) / (len(seeds) + 1)
        for key, value in baselines.items()
        if key in study.baselines
    }
    study.order["recall"] = [REFERENCE, LAST]
    return study


def _long() -> tuple[dict, dict] | None:
    """The pilot's cells (every metric) and accuracy baselines, with "guess among the
    values present" on its regenerated test sequences; None when not run."""
    path = bench_file(LONG_FILE)
    if not path.is_file():
        return None
    cells, baselines = read_test_csv(path, _parser(LONG_RUN, TWO))
    add_present(baselines, LONG_SYMBOLS, LONG_LENGTHS, LONG_FILE)
    return cells, baselines


def long_table() -> str:
    """The 16× pilot: each plan's test accuracy and exact match at one seed, the baselines."""
    read = _long()
    if read is None:
        return NOT_RUN
    cells, baselines = read
    head = ["variant", *(f"n={n} ({n // LONG_LENGTHS[0]}×)" for n in LONG_LENGTHS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rule in sorted({r for _, r, _ in baselines}):
        values = [baselines.get(("recall", rule, n)) for n in LONG_LENGTHS]
        lines.append(
            f"| baseline: {rule} | "
            + " | ".join("–" if v is None else f"{v:.3f}" for v in values)
            + " |"
        )
    for name in (REFERENCE, LAST):
        row = []
        for n in LONG_LENGTHS:
            a = cells.get(("recall", name, n, "acc"), {})
            e = cells.get(("recall", name, n, "exact"), {})
            if not a:
                row.append("–")
                continue
            seed = min(a)
            solved = " · solved" if e.get(seed, 0.0) >= SOLVED else ""
            row.append(f"{a[seed]:.3f} (exact {e.get(seed, float('nan')):.3f}){solved}")
        lines.append(f"| `{name}` | " + " | ".join(row) + " |")
    return "\n".join(lines)


def long_reach() -> dict[str, str]:
    """Each pilot plan -> how far it solves (``solves up to n=64 (16×)`` or ``solves no
    length``); empty when not run."""
    read = _long()
    if read is None:
        return {}
    cells, _ = read
    first = LONG_LENGTHS[0]
    reach = {}
    for name in (REFERENCE, LAST):
        solved = [
            n
            for n in LONG_LENGTHS
            if cells.get(("recall", name, n, "exact"))
            and min(cells[("recall", name, n, "exact")].values()) >= SOLVED
        ]
        reach[name] = (
            f"solves up to n={max(solved)} ({max(solved) // first}×)"
            if solved
            else "solves no length"
        )
    return reach


def long_findings() -> str:
    """What the pilot shows: how far each plan solves and whether it is above the best
    baseline at 1× (one seed)."""
    read = _long()
    if read is None:
        return NOT_RUN
    cells, baselines = read
    first = LONG_LENGTHS[0]
    best = max(v for (_, _, n), v in baselines.items() if n == first)
    parts = []
    for name, reach in long_reach().items():
        at_first = cells.get(("recall", name, first, "acc"), {})
        above = bool(at_first) and min(at_first.values()) > best
        parts.append(
            f"`{name}` {reach}; at 1× its accuracy is {'above' if above else 'not above'} "
            f"the best baseline ({best:.3f})"
        )
    return (
        "One seed per plan (a pilot: no interval, no test): "
        + "; ".join(parts)
        + ". With one run each this shows what these two runs did, not how the plans compare: "
        "whether it holds over seeds, and whether all-global RoPE learns the setting with a "
        "longer budget, is not tested."
    )
