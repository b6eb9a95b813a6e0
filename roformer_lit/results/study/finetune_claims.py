"""The fine-tuning guide's claims under its table (region ``finetune-findings`` of
``docs/guide/finetuning.md``): which schemes' runs are below every other run, the top
group against the next (a hypothesis: the groups are drawn from the table), and the ×10
position-learning-rate fine-tunes. The guide typed these by hand ("13 of 18 runs", "132 of
144 pairs, p = 0.0006", "t5 0.615 ± 0.011").

Raw outputs: :data:`~.finetune.RAW` (every fine-tune of the positions sweep) and
:data:`TENFOLD_RAW` (the ×10 checkpoints, fine-tuning seed 0).
"""

from __future__ import annotations

import statistics

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import mann_whitney
from roformer_lit.results.study.finetune import COLUMNS, accuracies
from roformer_lit.results.study.mlm import SEEDS
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import csv_rows
from roformer_lit.results.study.words import names, span

TENFOLD_RAW = "cpu-2026-11-23-finetune-position-lr.csv"
#: How many schemes form the top group and the next (drawn from the table's order).
GROUP = 4


def _runs(scheme: str) -> list[float]:
    return [x for runs in accuracies()[scheme].values() for x in runs]


def _means(scheme: str) -> list[float]:
    return [statistics.fmean(runs) for runs in accuracies()[scheme].values()]


@cached
def tenfold() -> dict[str, list[float]]:
    """``scheme -> [accuracy per pretraining seed]`` of the ×10 checkpoints' fine-tunes."""
    path = bench_file(TENFOLD_RAW)
    found: dict[str, dict[int, float]] = {}
    for row in csv_rows(path, COLUMNS):
        scheme = row["variant"].removesuffix("-softmax")
        by_seed = found.setdefault(scheme, {})
        if row["pretrain_seed"] in by_seed or row["finetune_seed"] != 0:
            raise ConfigError(
                f"{path}: {scheme} pretraining seed {row['pretrain_seed']} fine-tuning seed "
                f"{row['finetune_seed']}: each pretraining seed needs one fine-tune, seed 0"
            )
        by_seed[row["pretrain_seed"]] = row["accuracy"]
    for scheme, by_seed in found.items():
        if sorted(by_seed) != list(SEEDS):
            raise ConfigError(f"{path}: {scheme} has pretraining seeds {sorted(by_seed)}")
    return {s: [by_seed[k] for k in SEEDS] for s, by_seed in found.items()}


def findings() -> str:
    order = sorted(accuracies(), key=lambda s: -statistics.fmean(_means(s)))
    bottom, rest = order[-2:], order[:-2]
    others = [x for s in rest for x in _runs(s)]
    theirs = [x for s in bottom for x in _runs(s)]
    below = [x for x in theirs if x < min(others)]
    above = [x for x in theirs if x >= min(others)]
    ordered = [
        f"`{a}` / `{b}`"
        for i, a in enumerate(rest)
        for b in rest[i + 1 :]
        if min(_runs(a)) > max(_runs(b)) or max(_runs(a)) < min(_runs(b))
    ]
    top, nxt = order[:GROUP], order[GROUP : 2 * GROUP]
    high = [m for s in top for m in _means(s)]
    low = [m for s in nxt for m in _means(s)]
    u, p = mann_whitney(high, low)
    base = {s: [accuracies()[s][k][0] for k in SEEDS] for s in tenfold()}
    tenfold_parts = [
        f"{s} {statistics.fmean(v):.3f} ± {statistics.stdev(v):.3f}" for s, v in tenfold().items()
    ]
    against = [f"{statistics.fmean(base[s]):.3f}" for s in tenfold()]
    every_below = [f"`{s}`" for s, v in tenfold().items() if max(v) < min(base[s])]
    bottom_names = names([f"`{s}`" for s in bottom])
    return "\n".join(
        [
            f"- **What holds on every run:** {bottom_names}, still on the unigram plateau "
            "(above `nope`'s MLM loss), are the two lowest ("
            + ", ".join(f"{statistics.fmean(_means(s)):.3f}" for s in bottom)
            + f"), and {len(below)} of their {len(theirs)} runs "
            + (f"({span(below)}) " if below else "")
            + f"are below every run of every other scheme ({span(others)})"
            + (f"; the other {len(above)} ({span(above)}) are not" if above else "")
            + f". Pairs of the other {len(rest)} schemes ordered on every run: "
            f"{names(ordered)}.",
            f"- **A hypothesis, not a finding:** the {GROUP} schemes at the top "
            f"({', '.join(top)}; per checkpoint {span(high)}) are above the next {GROUP} "
            f"({', '.join(nxt)}; {span(low)}) in {u:g} of {len(high) * len(low)} pairs of "
            f"checkpoints (two-sided Mann–Whitney U, normal approximation, p = {p:.2g}), but "
            "the groups were drawn after looking at the table, so the p-value is not a test.",
            "- **At 10× the position learning rate** (fine-tuning seed 0 only, "
            f"`docs/bench/{TENFOLD_RAW}`): {', '.join(tenfold_parts)} over their pretraining "
            f"seeds, against {' and '.join(against)} for the ×1 checkpoints' seed-0 fine-tunes; "
            f"every ×10 run below every ×1 seed-0 run of its scheme: {names(every_below)}. "
            "One fine-tuning seed again: it says where to look, not what is so.",
        ]
    )
