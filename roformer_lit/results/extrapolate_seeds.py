"""``extrapolate``'s second table: each variant's loss per length over its seeds.

Checkpoints are grouped into variants exactly as ``compare`` groups runs
(:func:`roformer_lit.results.compare.variants.variant_labels` over the model's and the data's
hyperparameters): checkpoints whose settings differ only in seeds are the seeds of one
variant. Per variant and length, with ``x_s`` the loss of seed ``s`` and ``n`` seeds, the
cell is ``mean [low, high]``, the mean and its 95 % Student-t interval
(:func:`roformer_lit.results.statistics.mean_interval`):

    mean = (1/n) Σ_s x_s        s = sqrt(Σ_s (x_s − mean)² / (n − 1))
    low, high = mean ∓ t_{0.975, n−1} · s / sqrt(n)

A position task's cell adds its verdict over the seeds
(:func:`roformer_lit.results.extrapolate_rows.seed_verdict`: ``solved``, ``> baseline on
every seed``, or nothing).

A cell some seed could not evaluate says so ("refused ..." when none could, "n/a (k of n
evaluated)" when only some could) instead of averaging over fewer seeds. Variants with a
single checkpoint are left out: the first table already shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roformer_lit.results.compare.variants import variant_labels
from roformer_lit.results.extrapolate_rows import SOLVED_AT, CellScores, seed_verdict
from roformer_lit.results.statistics import mean_interval
from roformer_lit.run_files import warn


@dataclass(frozen=True)
class CheckpointLosses:
    """One evaluated checkpoint: its hyperparameters and one cell per length."""

    hparams: Mapping[str, Any]  # model and data hyperparameters, seeds included
    losses: Sequence[float | None]  # per length, None where not evaluated
    why_not: Sequence[str | None]  # per length, the reason where not evaluated
    #: A position task's cells with their baselines (None: a corpus run).
    scores: Sequence[CellScores] | None = None
    #: Where it was read (for the warning naming a checkpoint counted once).
    path: str = ""
    #: Which replicate of its variant it is (its run's seeds, or the file; None:
    #: unknown, never taken for another): checkpoints of one replicate count once.
    replicate: Hashable | None = None


def cell(values: Sequence[float | None], reasons: Sequence[str | None]) -> str:
    """``mean [low, high]`` of one variant at one length (see the module docstring)."""
    finite = [v for v in values if v is not None]
    if len(finite) == len(values):
        return mean_interval(finite).text(3)
    if not finite:
        return next((r for r in reasons if r), "n/a")
    return f"n/a ({len(finite)} of {len(values)} evaluated)"


def once_per_replicate(
    members: Sequence[CheckpointLosses], report: Callable[[str], None] = warn
) -> list[CheckpointLosses]:
    """One variant's checkpoints with one per replicate, the first given kept: a run's
    ``best.ckpt`` and ``last.ckpt`` at one step (a hard link: one file), or two runs of the
    same seeds (``-seed0-2``), are one seed, not two; each left out is reported."""
    kept: dict[Hashable, CheckpointLosses] = {}
    out = []
    for member in members:
        first = (
            kept.setdefault(member.replicate, member) if member.replicate is not None else member
        )
        if first is not member:
            report(
                f"{member.path}: the same variant, step and seeds as {first.path}: one seed, "
                "counted once in the table over seeds"
            )
            continue
        out.append(member)
    return out


def seed_table(
    checkpoints: Sequence[CheckpointLosses],
    lengths: Sequence[int],
    unit: str = "L",
    threshold: float = SOLVED_AT,
    report: Callable[[str], None] = warn,
) -> str | None:
    """The markdown table over seeds, or None when no variant has two replicates; columns
    are headed ``<unit>=<length>`` (``n`` for a probe's input lengths). Each replicate
    counts once (:func:`once_per_replicate`)."""
    labels = variant_labels([c.hparams for c in checkpoints])
    groups: dict[str, list[CheckpointLosses]] = {}
    for label, checkpoint in zip(labels, checkpoints, strict=True):
        groups.setdefault(label, []).append(checkpoint)
    rows = []
    for label, members in groups.items():
        members = once_per_replicate(members, report)
        if len(members) < 2:
            continue
        cells = []
        for i in range(len(lengths)):
            text = cell([m.losses[i] for m in members], [m.why_not[i] for m in members])
            scored = [m.scores[i] for m in members if m.scores is not None]
            mark = seed_verdict(scored, threshold) if len(scored) == len(members) else ""
            cells.append(text + (f" {mark}" if mark else ""))
        rows.append(f"| {label} | {len(members)} | " + " | ".join(cells) + " |")
    if not rows:
        return None
    head = "| variant | seeds | " + " | ".join(f"{unit}={n}" for n in lengths) + " |"
    return "\n".join([head, "|---|---|" + "---|" * len(lengths), *rows])
