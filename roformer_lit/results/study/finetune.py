"""The positions sweep's checkpoints fine-tuned on ``movie_polarity``: the table and whether
MLM loss predicts fine-tuning accuracy. Region ``finetune-movie-polarity`` of
``docs/guide/finetuning.md``.

Raw outputs: :data:`RAW` (``compare``'s ``downstream_runs.csv``: one row per fine-tune) and
the MLM sweep's losses (:func:`~.mlm.mlm_losses`). Each scheme needs every pretraining seed
of :data:`~.mlm.SEEDS` with the same number of fine-tuning seeds, each once; otherwise the
file is refused in one line naming it and the scheme.
"""

from __future__ import annotations

import statistics
from collections import Counter

from roformer_lit.errors import ConfigError
from roformer_lit.finetune.examples import read_shipped
from roformer_lit.results.statistics import spearman
from roformer_lit.results.study.mlm import SEEDS, mlm_losses
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import csv_rows

RAW = "cpu-2026-11-23-finetune-movie-polarity.csv"
COLUMNS = {"variant": str, "pretrain_seed": int, "finetune_seed": int, "accuracy": float}


@cached
def accuracies() -> dict[str, dict[int, list[float]]]:
    """``scheme -> pretraining seed -> [accuracy of each fine-tuning seed]``."""
    path = bench_file(RAW)
    found: dict[str, dict[int, dict[int, float]]] = {}
    for row in csv_rows(path, COLUMNS):
        scheme = row["variant"].removesuffix("-softmax")
        runs = found.setdefault(scheme, {}).setdefault(row["pretrain_seed"], {})
        if row["finetune_seed"] in runs:
            raise ConfigError(
                f"{path}: {scheme} pretraining seed {row['pretrain_seed']} fine-tuning seed "
                f"{row['finetune_seed']} a second time: one run is one seed"
            )
        runs[row["finetune_seed"]] = row["accuracy"]
    for scheme, by_seed in found.items():
        counts = {len(runs) for runs in by_seed.values()}
        if sorted(by_seed) != list(SEEDS) or len(counts) != 1:
            raise ConfigError(
                f"{path}: {scheme} has pretraining seeds {sorted(by_seed)} with "
                f"{sorted(counts)} fine-tuning seeds: each of {list(SEEDS)} needs the same number"
            )
    return {
        scheme: {seed: [runs[k] for k in sorted(runs)] for seed, runs in sorted(by_seed.items())}
        for scheme, by_seed in found.items()
    }


#: Examples of slack when comparing an accuracy with the majority class: float32 accuracy
#: is exact to far better than a thousandth of an example on a split this size.
ROUNDING = 1e-3
#: The task the raw output's runs fine-tuned on (shipped with the project).
TASK = "movie_polarity"


@cached
def majority() -> tuple[int, int, float]:
    """``(validation examples, training examples, share of the validation split's most
    frequent label)`` of the shipped task: the accuracy of always predicting that label."""
    validation = [e.label for e in read_shipped(TASK, "validation")]
    train = read_shipped(TASK, "train")
    return len(validation), len(train), max(Counter(validation).values()) / len(validation)


def baseline() -> str:
    """What the accuracies are on, and which checkpoints are not above the majority class."""
    validation, train, share = majority()
    under = [
        f"`{scheme}` seed {seed}"
        for scheme, by_seed in accuracies().items()
        for seed, runs in by_seed.items()
        # in examples right, not in float32 accuracies: a run that predicts the majority class
        # logs 687/1285 rounded to float32, a hair above the float64 share
        if statistics.fmean(runs) * validation <= share * validation + ROUNDING
    ]
    checkpoints = sum(len(by_seed) for by_seed in accuracies().values())
    return (
        f"Accuracy is on the {validation:,} validation snippets of `{TASK}` ({train:,} "
        f"training); always predicting the validation split's majority class scores "
        f"{share:.3f} ({share * 100:.1f} %). Checkpoints whose mean over their fine-tuning seeds is "
        f"at or below it: {len(under)} of {checkpoints}"
        + (f" ({', '.join(under)})" if under else "")
        + "."
    )


def _checkpoint_means(scheme: str) -> list[float]:
    return [statistics.fmean(runs) for runs in accuracies()[scheme].values()]


def table() -> str:
    """The table (schemes by mean accuracy, best first) and the rank correlation of MLM
    loss with fine-tuning accuracy, in words that never call an interval holding 0 a
    finding of no link."""
    losses = mlm_losses(128)
    schemes = sorted(accuracies(), key=lambda s: -statistics.fmean(_checkpoint_means(s)))
    missing = [s for s in schemes if s not in losses]
    if missing:
        raise KeyError(f"no MLM loss for {', '.join(missing)}")
    rows = []
    for scheme in schemes:
        means, loss = _checkpoint_means(scheme), losses[scheme]
        fine = len(next(iter(accuracies()[scheme].values())))
        rows.append(
            f"| {scheme} | {statistics.fmean(loss):.3f} ± {statistics.stdev(loss):.3f} | "
            f"{statistics.fmean(means):.3f} ± {statistics.stdev(means):.3f} | {fine} | "
            + " / ".join(f"{m:.3f}" for m in means)
            + " |"
        )
    rho = spearman(
        [statistics.fmean(losses[s]) for s in schemes],
        [statistics.fmean(_checkpoint_means(s)) for s in schemes],
    )
    if rho.low is not None and rho.high is not None and rho.low <= 0.0 <= rho.high:
        verdict = (
            "the interval holds 0: **no evidence either way**. It is compatible with no link "
            f"and with a rank correlation anywhere from {rho.low:+.2f} to {rho.high:+.2f} "
            "(negative: a lower loss, a higher accuracy), so this table cannot say that MLM "
            "loss does not predict fine-tuning accuracy, nor that it does"
        )
    else:
        direction = (
            "a lower loss, a higher accuracy" if rho.rho < 0 else "a lower loss, a lower accuracy"
        )
        verdict = f"the interval excludes 0 ({direction})"
    seeds = " / ".join(str(s) for s in SEEDS)
    return "\n".join(
        [
            "| scheme | MLM val/loss, mean ± std over seeds | accuracy, mean ± std over "
            "pretraining seeds | fine-tuning seeds | accuracy per pretraining seed "
            f"{seeds} (mean over its fine-tuning seeds) |",
            "|---|---|---|---|---|",
            *rows,
            "",
            baseline(),
            "",
            "**Does MLM loss predict fine-tuning accuracy here?** Spearman's rank correlation "
            f"of the schemes' mean MLM val/loss (L = 128) and mean accuracy: {rho.text()}; "
            f"{verdict}.",
        ]
    )


def _pooled_within(scheme: str) -> float:
    """The pooled std over fine-tuning seeds within a scheme's checkpoints."""
    squares, freedom = 0.0, 0
    for runs in accuracies()[scheme].values():
        mean = statistics.fmean(runs)
        squares += sum((x - mean) ** 2 for x in runs)
        freedom += len(runs) - 1
    return (squares / freedom) ** 0.5 if freedom else 0.0


def spreads() -> str:
    """Region ``finetune-spreads``: the two spreads' ranges over the schemes (the page typed
    them by hand, one of them wrong: 0.009 for learned's 0.008)."""
    within = [_pooled_within(s) for s in accuracies()]
    between = [statistics.stdev(_checkpoint_means(s)) for s in accuracies()]
    return (
        "The std over fine-tuning seeds of one checkpoint (pooled, per scheme) is "
        f"{min(within):.3f}–{max(within):.3f}; the std over the {len(SEEDS)} pretraining "
        f"seeds' means is {min(between):.3f}–{max(between):.3f}."
    )
