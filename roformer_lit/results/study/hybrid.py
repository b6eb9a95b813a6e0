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
import statistics

from roformer_lit.results.study.chance import caveat as chance_caveat
from roformer_lit.results.study.exact import smallest_p
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.plans import (
    RECALL_SHORT_FILE,
    RECALL_SHORT_LENGTHS,
    RECALL_SHORT_PLANS,
    RECALL_SHORT_RUN,
    RECALL_SHORT_SYMBOLS,
    one_task_parser,
)
from roformer_lit.results.study.present import add_present
from roformer_lit.results.study.seed_study import (
    Parse,
    SeedStudy,
    by_data_seed,
    merge_file,
)
from roformer_lit.results.study.words import NOT_RUN

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
#: data seeds 6-9 of the same sweep, evaluated later into a file of their own
MORE_DATA_SEEDS_FILE = "cpu-study-plans-recall-data-seeds-6-9.csv"
DATA_SEEDS_RUN = re.compile(
    r"study_plans_recall_data_seeds/(?P<plan>.+?)-dataseed(?P<seed>\d+)(?:/|$)"
)
#: data.seed of every run of study_plans_recall_short.yaml
SHORT_DATA_SEED = 0
LONG_FILE = "cpu-study-plans-recall-long.csv"
LONG_RUN = re.compile(r"study_plans_recall_long/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
#: seeds 1-2 of the 16x pilot (``study_plans_recall_long_seeds.yaml``)
LONG_SEEDS_FILE = "cpu-study-plans-recall-long-seeds.csv"
LONG_SEEDS_RUN = re.compile(r"study_plans_recall_long_seeds/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
#: all-global RoPE at three times the pilot's budget (``study_plans_recall_long_budget.yaml``)
LONG_BUDGET_FILE = "cpu-study-plans-recall-long-budget.csv"
LONG_BUDGET_RUN = re.compile(
    r"study_plans_recall_long_budget/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)"
)
#: its ``trainer.max_steps`` (tested against the sweep file)
LONG_BUDGET_STEPS = 48000
LONG_BUDGET = f"all-global RoPE, {LONG_BUDGET_STEPS:,} steps"
LONG_LENGTHS = [4, 8, 16, 32, 64]
LONG_SYMBOLS = 128
TWO = {"layer_plan=none": REFERENCE, "local8x2-global.nope": LAST}
#: the 1:3 interleave at two periods, against all-global RoPE at the same depth
INTERLEAVE8_FILE = "cpu-study-plans-recall-interleave8.csv"
INTERLEAVE8_RUN = re.compile(
    r"study_plans_recall_interleave8/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)"
)
INTERLEAVE8_PLANS = {
    "layer_plan=none": "all-global RoPE (8 layers)",
    "local8x3-global.nope": "(local RoPE ×3, global NoPE) ×2 (8 layers)",
}


def _parser(pattern: re.Pattern[str], plans: dict[str, str]) -> Parse:
    """:func:`~.plans.one_task_parser` of ``recall``."""
    return one_task_parser(pattern, "recall", plans)


def _merge(study: SeedStudy, file_name: str, parse: Parse) -> bool:
    """:func:`~.seed_study.merge_file` of a raw output in ``docs/bench/``."""
    return merge_file(study, bench_file(file_name), parse)


def _short(plans: dict[str, str]) -> SeedStudy:
    """The recall_short runs of ``plans`` as a study against all-global RoPE."""
    study = SeedStudy(RECALL_SHORT_LENGTHS, REFERENCE)
    _merge(study, RECALL_SHORT_FILE, _parser(RECALL_SHORT_RUN, plans))
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
    """The two plans by data seed (0: recall_short's seed-0 runs; 1-5 and 6-9: their own
    sweep, two raw outputs), paired by data seed; baselines the mean over the test sets."""
    study = by_data_seed(
        _short(TWO),
        [bench_file(DATA_SEEDS_FILE), bench_file(MORE_DATA_SEEDS_FILE)],
        _parser(DATA_SEEDS_RUN, TWO),
        data_seed=SHORT_DATA_SEED,
    )
    study.order = {"recall": [REFERENCE, LAST]} if study.cells else {}
    return study


@cached
def interleave8_study() -> SeedStudy:
    """The 1:3 interleave at 8 layers against all-global RoPE at 8 layers: its own family."""
    reference = INTERLEAVE8_PLANS["layer_plan=none"]
    study = SeedStudy(RECALL_SHORT_LENGTHS, reference)
    if _merge(study, INTERLEAVE8_FILE, _parser(INTERLEAVE8_RUN, INTERLEAVE8_PLANS)):
        study.order["recall"] = list(INTERLEAVE8_PLANS.values())
        add_present(study.baselines, RECALL_SHORT_SYMBOLS, RECALL_SHORT_LENGTHS, INTERLEAVE8_FILE)
    return study


@cached
def long_study() -> SeedStudy:
    """The 16× pilot's runs (seed 0: :data:`LONG_FILE`; seeds 1-2 where
    :data:`LONG_SEEDS_FILE` exists, scored on the same sequences), with "guess among the
    values present" on its regenerated test sequences; empty when not run."""
    study = SeedStudy(LONG_LENGTHS, REFERENCE)
    if _merge(study, LONG_FILE, _parser(LONG_RUN, TWO)):
        _merge(study, LONG_SEEDS_FILE, _parser(LONG_SEEDS_RUN, TWO))
        study.order["recall"] = [REFERENCE, LAST]
        budget = _parser(LONG_BUDGET_RUN, {"layer_plan=none": LONG_BUDGET})
        if _merge(study, LONG_BUDGET_FILE, budget):
            study.order["recall"].append(LONG_BUDGET)
        add_present(study.baselines, LONG_SYMBOLS, LONG_LENGTHS, LONG_FILE)
    return study


def long_seeds() -> int:
    """The fewest seeds a plan of the pilot has at 1×."""
    study = long_study()
    return min(len(study.values("recall", name, LONG_LENGTHS[0])) for name in (REFERENCE, LAST))


def long_table() -> str:
    """The 16× pilot: each plan's mean test accuracy with every seed's accuracy and exact
    match, and how many seeds solve; the baselines."""
    study = long_study()
    if not study.tasks():
        return NOT_RUN
    head = ["variant", *(study.times(n) for n in LONG_LENGTHS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rule in sorted({r for _, r, _ in study.baselines}):
        values = [study.baselines.get(("recall", rule, n)) for n in LONG_LENGTHS]
        lines.append(
            f"| baseline: {rule} | "
            + " | ".join("–" if v is None else f"{v:.3f}" for v in values)
            + " |"
        )
    for name in study.order["recall"]:
        row = []
        for n in LONG_LENGTHS:
            acc, exact = study.values("recall", name, n), study.values("recall", name, n, "exact")
            if not acc:
                row.append("–")
                continue
            seeds = ", ".join(
                f"{acc[s]:.3f} (exact {exact.get(s, float('nan')):.3f})" for s in sorted(acc)
            )
            solved, count = study.solved("recall", name, n)
            mean = "" if count == 1 else f"{statistics.fmean(acc.values()):.3f}: "
            row.append(f"{mean}{seeds} · {solved}/{count} solved")
        lines.append(f"| `{name}` | " + " | ".join(row) + " |")
    return "\n".join(lines)


def long_reach() -> dict[str, str]:
    """Each pilot plan -> the longest length solved on every seed, and the lengths some of
    its seeds solve beyond it (``solves up to n=32 (8×) on all 3 seeds; on some seeds:
    n=64 (16×) 2/3``, ``no length is solved on all 3 seeds; ...``, ``solves up to n=4 (1×)
    on its one seed``); empty when not run."""
    study = long_study()
    if not study.tasks():
        return {}
    reach = {}
    for name in study.order["recall"]:
        solved = [n for n in LONG_LENGTHS if study.solved_every("recall", name, n)]
        count = len(study.values("recall", name, LONG_LENGTHS[0]))
        if count == 1:
            text = (
                f"solves up to {study.times(max(solved))} on its one seed"
                if solved
                else "solves no length on its one seed"
            )
        else:
            text = (
                f"solves up to {study.times(max(solved))} on all {count} seeds"
                if solved
                else f"no length is solved on all {count} seeds"
            )
            some = [
                f"{study.times(n)} {study.solved('recall', name, n)[0]}/{count}"
                for n in LONG_LENGTHS
                if n > max(solved, default=0) and study.solved("recall", name, n)[0] > 0
            ]
            if some:
                text += f"; on some seeds: {', '.join(some)}"
        reach[name] = text
    return reach


def long_findings() -> str:
    """What the pilot shows: how far each plan solves on every seed, whether every seed is
    above the best baseline at 1×, and what its seeds can and cannot test."""
    study = long_study()
    if not study.tasks():
        return NOT_RUN
    first = LONG_LENGTHS[0]
    rule, best = study.best_baseline("recall", first)
    names = list(long_reach())
    tested = [len(study.values("recall", name, first)) for name in names]
    parts = [
        f"`{name}`: {reach}; at 1× its accuracy is "
        f"{'above' if study.above_baseline('recall', name, first) else 'not above'} the best "
        f"baseline (`{rule}`, {best:.3f}) " + ("on its one seed" if count == 1 else "on every seed")
        for (name, reach), count in zip(long_reach().items(), tested, strict=True)
    ]
    seeds = long_seeds()
    if seeds == 1:
        caveat = (
            "One seed per plan (a pilot: no interval, no test). With one run each this shows "
            "what these two runs did, not how the plans compare"
        )
    else:
        caveat = (
            f"{seeds} seeds for each 16,000-step plan: the exact paired test cannot go below p = "
            f"{smallest_p(seeds):.4g}, so no difference here is test-backed; this shows what "
            "these runs did, every seed counted"
        )
    budget = (
        f" `{LONG_BUDGET}` is one run (seed 0) with the schedule stretched to its budget: "
        "whether all-global RoPE learns the setting at 1× given more steps is read off that "
        "one run, not tested over seeds."
        if LONG_BUDGET in study.order["recall"]
        else " Whether all-global RoPE learns the setting with a longer budget is not tested."
    )
    above = sum(study.above_baseline("recall", name, first) for name in names)
    chance = (
        f" Above the best baseline at 1× on every seed: {chance_caveat(above, tested, 'plans')}."
    )
    return caveat + ". " + " · ".join(parts) + "." + chance + budget
