"""``extrapolate``'s results as long rows, baselines beside the runs, and each cell's verdict.

* :func:`long_rows` / :func:`to_csv`: the ``--csv FILE`` contents, one row per
  (checkpoint or baseline, length, metric): columns ``name,length,metric,value,split``
  (``metric``: ``acc``, ``exact`` or ``loss``; ``split``: the ``--split`` every row was
  evaluated on, ``val`` or ``test``, so that a reader such as ``compare --report`` can tell
  held-out numbers from the validation ones; files from before the column have none);
  ``--budget FILE`` is the same with a ``step`` column after ``name`` (the checkpoint's
  optimiser steps, empty for baselines): accuracy against training steps. Baselines are rows named ``baseline:<rule>``
  (:mod:`roformer_lit.data.probes.baselines` for position tasks; for corpus runs
  ``baseline:unigram``, the entropy of the masked tokens' own frequencies, an in-sample
  reference, and ``baseline:train_unigram``, their loss under the training split's
  add-one-smoothed unigram distribution, a baseline a model could reach); with several
  position tasks in one call, ``baseline:<rule>:<task>``.
* A baseline row's value at a length is the mean of the rule's score over the distinct sets
  of evaluation sequences at that length that differ in their data seed alone (a sweep's
  seeds share one). Sets of other data -- another tokenizer, corpus (its recorded data
  identity), masking rate, symbol count, number of sequences -- are never averaged: each
  is its own row, named with the settings that tell it apart as ``compare`` labels
  variants (:func:`~roformer_lit.results.compare.variants.setting_labels`), e.g.
  ``baseline:unigram (requested_vocab_size=1000)``.
* :func:`verdict`: a position-task cell reads ``solved`` when its exact match is at least
  the threshold (``--solved``, default 0.9), ``> baseline`` when its accuracy is above the
  best baseline's accuracy on its own sequences, nothing otherwise; over seeds
  (:func:`seed_verdict`) ``solved`` needs every seed solved and ``> baseline on every seed``
  every seed above its best baseline.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roformer_lit.results.compare.variants import format_value, setting_labels
from roformer_lit.results.extrapolate_columns import BUDGET_COLUMNS, COLUMNS

#: Default exact-match threshold of a "solved" cell.
SOLVED_AT = 0.9


@dataclass
class CellScores:
    """One evaluated cell as the rows need it: the run's numbers and its baselines'."""

    length: int
    acc: float | None = None
    exact: float | None = None
    loss: float | None = None
    #: ``rule -> (acc, exact)`` for a position task; ``{"unigram": (None, loss)}`` never:
    #: a corpus cell's unigram loss is :attr:`unigram_loss`.
    baselines: dict[str, tuple[float, float]] = field(default_factory=dict)
    unigram_loss: float | None = None
    train_unigram_loss: float | None = None
    #: Which evaluation sequences the baselines were scored on: the data settings that fix
    #: them, seed included (a corpus run's also its data identity and number of blocks, a
    #: position task's its symbols, number of sequences and split).
    sequences: Mapping[str, Any] | None = None
    task: str | None = None


@dataclass
class CheckpointRows:
    """One checkpoint's cells, its name in the rows and its step."""

    name: str
    step: int | None
    cells: Sequence[CellScores]


def verdict(cell: CellScores, threshold: float = SOLVED_AT) -> str:
    """``solved``, ``> baseline`` or ``""`` (module docstring)."""
    if cell.exact is not None and cell.exact >= threshold:
        return "solved"
    if cell.acc is not None and cell.baselines:
        best = max(acc for acc, _ in cell.baselines.values())
        if cell.acc > best:
            return "> baseline"
    return ""


def seed_verdict(cells: Sequence[CellScores], threshold: float = SOLVED_AT) -> str:
    """A variant's verdict at one length over its seeds' cells (module docstring)."""
    verdicts = [verdict(c, threshold) for c in cells]
    if cells and all(v == "solved" for v in verdicts):
        return "solved"
    if cells and all(v in ("solved", "> baseline") for v in verdicts):
        return "> baseline on every seed"
    return ""


def baseline_rows(checkpoints: Sequence[CheckpointRows]) -> list[tuple[str, int, str, float]]:
    """``(name, length, metric, value)`` of every baseline (module docstring)."""
    tasks = {c.task for cp in checkpoints for c in cp.cells if c.task is not None}
    seen: dict[tuple, CellScores] = {}
    for checkpoint in checkpoints:
        for cell in checkpoint.cells:
            if cell.sequences is not None and (cell.baselines or cell.unigram_loss is not None):
                key = (cell.task, cell.length, format_value(dict(cell.sequences)))
                seen.setdefault(key, cell)
    places: dict[tuple[str | None, int], list[CellScores]] = {}
    for (task, length, _), cell in seen.items():
        places.setdefault((task, length), []).append(cell)
    grouped: dict[tuple[str, int, str], list[float]] = {}
    for (task, length), cells in places.items():
        suffix = f":{task}" if task is not None and len(tasks) > 1 else ""
        labels = setting_labels([dict(c.sequences or {}) for c in cells])
        for cell, label in zip(cells, labels, strict=True):
            data = f" ({label})" if label else ""
            for rule, (acc, exact) in cell.baselines.items():
                name = f"baseline:{rule}{suffix}{data}"
                grouped.setdefault((name, length, "acc"), []).append(acc)
                grouped.setdefault((name, length, "exact"), []).append(exact)
            for rule, loss in (
                ("unigram", cell.unigram_loss),
                ("train_unigram", cell.train_unigram_loss),
            ):
                if loss is not None:
                    grouped.setdefault((f"baseline:{rule}{data}", length, "loss"), []).append(loss)
    return [(n, length, m, sum(v) / len(v)) for (n, length, m), v in grouped.items()]


def long_rows(checkpoints: Sequence[CheckpointRows]) -> list[tuple[str, int, str, float, str]]:
    """Every row of the ``--csv`` file: the checkpoints' cells, then the baselines."""
    rows: list[tuple[str, int, str, float, str]] = []
    for checkpoint in checkpoints:
        step = "" if checkpoint.step is None else str(checkpoint.step)
        for cell in checkpoint.cells:
            for metric in ("acc", "exact", "loss"):
                value = getattr(cell, metric)
                if value is not None:
                    rows.append((checkpoint.name, cell.length, metric, value, step))
    rows += [(*row, "") for row in baseline_rows(checkpoints)]
    return rows


def to_csv(checkpoints: Sequence[CheckpointRows], split: str, with_step: bool = False) -> str:
    """The ``--csv`` file's text (:data:`COLUMNS`, full precision), every row of ``split``
    (the ``--split`` its cells were evaluated on); with ``with_step``, the ``--budget``
    file's (:data:`BUDGET_COLUMNS`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(BUDGET_COLUMNS if with_step else COLUMNS)
    for name, length, metric, value, step in long_rows(checkpoints):
        row = [name, length, metric, repr(float(value)), split]
        writer.writerow([name, step, *row[1:]] if with_step else row)
    return buffer.getvalue()


def baseline_table_rows(
    checkpoints: Sequence[CheckpointRows], lengths: Sequence[int], probe: bool
) -> list[str]:
    """The console table's ``baseline:<rule>`` rows (``acc / exact``, or the loss)."""
    values: dict[str, dict[int, dict[str, float]]] = {}
    for name, length, metric, value in baseline_rows(checkpoints):
        values.setdefault(name, {}).setdefault(length, {})[metric] = value
    lines = []
    for name, by_length in values.items():
        cells = []
        for length in lengths:
            got = by_length.get(length)
            if got is None:
                cells.append("–")
            elif probe and "acc" in got:
                cells.append(f"{got['acc']:.3f} / {got['exact']:.3f}")
            else:
                cells.append(f"{got.get('loss', float('nan')):.3f}")
        lines.append(f"| {name} | – | – | " + " | ".join(cells) + " |")
    return lines
