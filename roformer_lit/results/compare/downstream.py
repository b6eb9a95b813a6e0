"""Downstream results per pretraining variant: ``aggregate_downstream(finetune_runs)``.

A *fine-tune run* is a run whose hyperparameters name a ``pretrained`` checkpoint and a
``task`` (written by ``python -m roformer_lit finetune``). Its pretrained run is the
directory ``<run>`` of ``<run>/checkpoints/<file>.ckpt``; a relative ``pretrained`` path is
looked up from the current directory first, then from each directory above the fine-tune
run. A pretrained run that cannot be found is reported (one ``warning:`` line) and the
fine-tune run is grouped under its checkpoint path as written, with no MLM numbers.

Per fine-tune run, the task's metrics are those of its best validation, the one
``best.ckpt`` was chosen by: the first validation at which ``val/<main metric>`` reached its
maximum (its minimum when the run's ``checkpoint.mode`` is ``min``; the main metric is the
run's ``checkpoint.monitor`` if it names one, else the task's first metric); every other
``val/<metric>`` is its value at that same step.

Rows are (task, pretraining variant, fine-tuning settings that differ between the runs).
The pretraining variant is the label :func:`roformer_lit.results.compare.variants.assign_variants`
gives the pretrained runs among themselves (``rope-softmax``, ...). With checkpoints
``c = 1..C`` of a row (one per pretraining seed) and ``x_ci`` the metric of the ``n_c``
fine-tuning seeds of checkpoint ``c``::

    m_c         = (1 / n_c) sum_i x_ci                       per-checkpoint mean
    mean        = (1 / C) sum_c m_c                          (both columns show it)
    std_pretrain = sqrt( sum_c (m_c - mean)^2 / (C - 1) )    spread over pretraining seeds
    std_finetune = sqrt( sum_c sum_i (x_ci - m_c)^2 / sum_c (n_c - 1) )
                   pooled within-checkpoint sample std: spread over fine-tuning seeds
                   with the pretrained weights fixed

Fine-tunes of one task that agree on every setting but trained on other data -- the same
``data.*`` paths naming task files whose content differed, recorded in their
``data_identity.json`` (:mod:`roformer_lit.finetune.task_identity`) -- are never seeds of one
row: where a task's fine-tunes recorded more than one identity, each is labelled
``data=<first hex digits>`` (:func:`_label_data`) and one ``note:`` line per such task says
so (:func:`downstream_data_notes`). A fine-tune without a record (from before it) has an
unknown identity and is labelled by its settings alone.

Each fine-tuning seed counts once per checkpoint (the same fine-tune run twice is one
experiment: the first by path, the others reported), and an unfinished fine-tune (not yet
validated at its last step, :attr:`RunSummary.finished`) is named in the row's notes, never averaged;
so is a fine-tune whose pretrained run is unfinished (still training, or stopped before its
end): its checkpoint holds another length's weights than its variant's finished seeds.

A std is None where its denominator is 0 (one checkpoint; one fine-tuning seed each). The
MLM columns are the row's pretrained runs' final and best ``val/loss``: mean and sample std
(``ddof=1``) over those runs, i.e. over pretraining seeds (:class:`Stat`).
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roformer_lit.results.compare.aggregate import LEFT_OUT, Stat, once_per_seed
from roformer_lit.results.compare.runs import Report, RunSummary, summarize_run
from roformer_lit.results.compare.variants import (
    DATA_KEY,
    assign_variants,
    data_note,
    differing_keys,
    flatten,
)
from roformer_lit.results.events import RunEvents, read_run
from roformer_lit.run_files import RunFileError, is_run_directory, read_yaml_mapping, warn
from roformer_lit.training.data_identity import short_identity

#: Fine-tuning hyperparameters that never split rows (the row has them already, or a seed).
_ROW_KEYS = frozenset({"pretrained", "task", "num_labels"})


def is_finetune(run: RunSummary) -> bool:
    """Whether ``run`` was written by ``finetune`` (its hparams name ``pretrained``/``task``)."""
    return "pretrained" in run.hparams and "task" in run.hparams


@dataclass
class FinetuneResult:
    """One fine-tune run: its pretrained run and the metrics of its best validation."""

    run: RunSummary
    task: str
    pretrained: str  # the checkpoint path as the run's hparams give it
    pretrained_run: RunSummary | None  # None: not found
    main_metric: str  # e.g. "accuracy" (the tag is val/<main_metric>)
    metrics: dict[str, float | None]  # metric name (no "val/") -> value at the best validation
    pretrain_variant: str = ""
    finetune_setting: str = ""  # fine-tuning hyperparameters differing between runs

    @property
    def checkpoint_file(self) -> str:
        """The pretrained checkpoint's file name (``last.ckpt``, ``step=1500.ckpt``)."""
        return Path(self.pretrained).name

    @property
    def checkpoint_key(self) -> str:
        """One pretraining seed: the pretrained run's directory and checkpoint file (two
        checkpoints of one run hold other weights), else the checkpoint path."""
        if self.pretrained_run is None:
            return self.pretrained
        return str(Path(self.pretrained_run.path) / "checkpoints" / self.checkpoint_file)


@dataclass
class DownstreamRow:
    """One (task, pretraining variant, fine-tuning setting) and its statistics."""

    task: str
    variant: str  # pretraining variant, then the fine-tuning setting if any
    results: list[FinetuneResult]
    pretrained_runs: list[RunSummary]
    metric_names: list[str]  # the main metric first
    #: metric -> (Stat over fine-tuning seeds, Stat over pretraining seeds); same mean.
    stats: dict[str, tuple[Stat, Stat]] = field(default_factory=dict)
    mlm: dict[str, Stat] = field(default_factory=dict)  # final_val_loss, best_val_loss
    notes: list[str] = field(default_factory=list)

    @property
    def main_metric(self) -> str:
        return self.metric_names[0]

    @property
    def checkpoints(self) -> list[str]:
        return list(dict.fromkeys(r.checkpoint_key for r in self.results))

    @property
    def pretrain_seeds(self) -> list[int | None]:
        return [r.seed for r in self.pretrained_runs]

    @property
    def finetune_seeds(self) -> list[int | None]:
        seeds = {r.run.seed for r in self.results}
        return sorted(seeds, key=lambda s: (s is None, s or 0))


def two_level(groups: Sequence[Sequence[float]]) -> tuple[Stat, Stat]:
    """``(over fine-tuning seeds, over pretraining seeds)`` of ``groups`` (one list of
    finite values per checkpoint; empty lists are dropped), as in the module docstring."""
    groups = [list(g) for g in groups if g]
    if not groups:
        return Stat(None, None, 0), Stat(None, None, 0)
    means = [statistics.fmean(g) for g in groups]
    mean = statistics.fmean(means)
    dof = sum(len(g) - 1 for g in groups)
    within = sum((x - m) ** 2 for g, m in zip(groups, means, strict=True) for x in g)
    std_ft = math.sqrt(within / dof) if dof > 0 else None
    std_pt = statistics.stdev(means) if len(means) > 1 else None
    return Stat(mean, std_ft, sum(len(g) for g in groups)), Stat(mean, std_pt, len(groups))


def aggregate_downstream(
    runs: Sequence[RunSummary], cwd: str | Path | None = None, report: Report = warn
) -> list[DownstreamRow]:
    """Rows of the fine-tune ``runs`` (see the module docstring), by task, best main metric
    first."""
    cache: dict[Path, RunSummary] = {}
    results = [_result(run, Path(cwd or os.getcwd()), report, cache) for run in runs]
    _label_pretraining(results)
    _label_settings(results)
    _label_data(results)
    groups: dict[tuple[str, str], list[FinetuneResult]] = {}
    for result in results:
        label = " ".join(x for x in (result.pretrain_variant, result.finetune_setting) if x)
        groups.setdefault((result.task, label), []).append(result)
    rows = []
    for (task, label), members in groups.items():
        counted, unfinished = _counted(members, report)
        row = _row(task, label, counted, metrics_of=members)
        row.notes += [_unfinished_note(r) for r in unfinished]
        rows.append(row)
    return sorted(rows, key=_sort_key)


def _counted(
    members: Sequence[FinetuneResult], report: Report
) -> tuple[list[FinetuneResult], list[FinetuneResult]]:
    """``(averaged, unfinished)``: of one row's fine-tunes, those its means read -- finished
    (:attr:`RunSummary.finished`), one per seeds per pretrained checkpoint
    (:func:`~roformer_lit.results.compare.aggregate.once_per_seed`: the same fine-tune run
    twice is one experiment, reported) -- and the unfinished ones (another length's
    numbers), which only its notes name."""
    unfinished = [r for r in members if not _finished(r)]
    by_checkpoint: dict[str, list[FinetuneResult]] = {}
    for result in members:
        if _finished(result):
            by_checkpoint.setdefault(result.checkpoint_key, []).append(result)
    counted = []
    for group in by_checkpoint.values():
        kept = {id(run) for run in once_per_seed([r.run for r in group], report)}
        counted += [r for r in group if id(r.run) in kept]
    return counted, unfinished


def _finished(result: FinetuneResult) -> bool:
    """Whether ``result`` counts: the fine-tune validated at its last step, and its pretrained
    run at its own (a checkpoint of a pretraining run still training, or stopped before its
    end, holds another length's weights than the finished seeds of its variant)."""
    pretrained = result.pretrained_run
    return result.run.finished and (pretrained is None or pretrained.finished)


def _unfinished_note(result: FinetuneResult) -> str:
    """The row's note naming a fine-tune :func:`_finished` leaves out, and why."""
    where = Path(result.run.path).name
    if not result.run.finished:
        return f"{where}: {result.run.stopped}; {LEFT_OUT}"
    pretrained = result.pretrained_run
    assert pretrained is not None
    return (
        f"{where}: its pretrained run {Path(pretrained.path).name} is {pretrained.stopped}; "
        f"{LEFT_OUT}"
    )


def _sort_key(row: DownstreamRow) -> tuple[str, bool, float, str]:
    mean = row.stats[row.main_metric][0].mean if row.main_metric in row.stats else None
    return (row.task, mean is None, -(mean or 0.0), row.variant)


def _row(
    task: str, label: str, members: list[FinetuneResult], metrics_of: list[FinetuneResult]
) -> DownstreamRow:
    """The row of ``members`` (the fine-tunes it averages), its columns the metrics of
    ``metrics_of`` (every fine-tune of the row: a row whose runs are all unfinished still
    has its columns, empty)."""
    members = sorted(members, key=lambda r: (r.checkpoint_key, r.run.seed or 0, str(r.run.path)))
    names = list(dict.fromkeys(m for r in metrics_of for m in [r.main_metric, *r.metrics]))
    pretrained = list(
        {
            str(r.pretrained_run.path): r.pretrained_run
            for r in members
            if r.pretrained_run is not None
        }.values()
    )
    pretrained.sort(key=lambda r: (r.seed is None, r.seed or 0, str(r.path)))
    row = DownstreamRow(task, label, members, pretrained, names)
    for name in names:
        by_checkpoint: dict[str, list[float]] = {}
        for result in members:
            value = result.metrics.get(name)
            if value is not None and math.isfinite(value):
                by_checkpoint.setdefault(result.checkpoint_key, []).append(value)
        row.stats[name] = two_level(list(by_checkpoint.values()))
    row.mlm = {
        m: Stat.of([getattr(r, m) for r in pretrained]) for m in ("final_val_loss", "best_val_loss")
    }
    for result in members:
        where = Path(result.run.path).name
        if result.pretrained_run is None:
            row.notes.append(f"{where}: pretrained run not found")
        if result.metrics.get(result.main_metric) is None:
            row.notes.append(f"{where}: no val/{result.main_metric} logged")
        row.notes += [f"{where}: {p}" for p in result.run.problems]
    return row


def _result(
    run: RunSummary, cwd: Path, report: Report, cache: dict[Path, RunSummary]
) -> FinetuneResult:
    task = str(run.hparams.get("task"))
    pretrained = str(run.hparams.get("pretrained"))
    pretrained_dir = find_pretrained_run(pretrained, Path(run.path), cwd)
    pretrained_run = None
    if pretrained_dir is None:
        report(
            f"{run.path}: pretrained run of {pretrained} not found; "
            "grouped under its checkpoint path"
        )
    else:
        key = pretrained_dir.resolve()
        if key not in cache:
            cache[key] = summarize_run(pretrained_dir)
        pretrained_run = cache[key]
    config = _config(Path(run.path))
    main, mode = _monitor(config, task, run.hparams)
    metrics = best_validation(read_run(run.path), main, mode)
    return FinetuneResult(run, task, pretrained, pretrained_run, main, metrics)


def find_pretrained_run(pretrained: str, finetune_dir: Path, cwd: Path) -> Path | None:
    """The run directory of checkpoint ``pretrained`` (see the module docstring), or None."""
    path = Path(pretrained)
    bases = [Path("/")] if path.is_absolute() else [cwd, *finetune_dir.resolve().parents]
    for base in bases:
        ckpt = base / path
        if ckpt.parent.name != "checkpoints":
            return None
        run = ckpt.parent.parent
        if run.is_dir() and is_run_directory(run):
            return run
    return None


def _config(run_dir: Path) -> dict[str, Any]:
    try:
        return read_yaml_mapping(run_dir / "config.yaml")
    except (RunFileError, OSError):
        return {}


def _monitor(config: dict[str, Any], task: str, hparams: dict[str, Any]) -> tuple[str, str]:
    """``(main metric without "val/", "max" | "min")`` the run's best checkpoint used."""
    checkpoint = config.get("checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    monitor, mode = checkpoint.get("monitor"), checkpoint.get("mode", "max")
    if isinstance(monitor, str) and monitor.startswith("val/"):
        return monitor.removeprefix("val/"), "min" if mode == "min" else "max"
    from roformer_lit.errors import ConfigError
    from roformer_lit.finetune.tasks import get_task, metrics_for

    try:
        return metrics_for(get_task(task), int(hparams.get("num_labels") or 2))[0], "max"
    except (ConfigError, TypeError, ValueError):
        return "accuracy", "max"


def best_validation(events: RunEvents, main: str, mode: str = "max") -> dict[str, float | None]:
    """Every ``val/<metric>`` but ``val/loss`` at the first validation where
    ``val/<main>`` is best; ``{main: None}`` if it was never logged."""
    series = events.scalars.get(f"val/{main}", [])
    finite = [s for s in series if math.isfinite(s.value)]
    if not finite:
        return {main: None}
    pick = max if mode == "max" else min
    target = pick(s.value for s in finite)
    step = next(s.step for s in finite if s.value == target)
    out: dict[str, float | None] = {main: target}
    for tag in sorted(events.scalars):
        name = tag.removeprefix("val/")
        if not tag.startswith("val/") or tag == "val/loss" or name == main:
            continue
        at = [s.value for s in events.scalars[tag] if s.step == step]
        out[name] = at[0] if at else None
    return out


def _label_pretraining(results: list[FinetuneResult]) -> None:
    """``pretrain_variant``: the pretrained runs' variant labels among themselves, or the
    checkpoint path where the run was not found; where the fine-tunes read more than one
    checkpoint file of their runs (``last.ckpt`` and a budget's ``step=1500.ckpt``), the
    file too (``ckpt=step=1500.ckpt``): other weights, never seeds of one row."""
    found = {str(r.pretrained_run.path): r.pretrained_run for r in results if r.pretrained_run}
    labelled = {str(r.path): r.variant for r in assign_variants(list(found.values()))}
    files = {r.checkpoint_file for r in results if r.pretrained_run}
    for result in results:
        run = result.pretrained_run
        result.pretrain_variant = labelled[str(run.path)] if run else result.pretrained
        if run is not None and len(files) > 1:
            result.pretrain_variant += f" ckpt={result.checkpoint_file}"


def _label_settings(results: list[FinetuneResult]) -> None:
    """``finetune_setting``: fine-tuning hyperparameters that differ between the runs."""
    hparams = [{k: v for k, v in r.run.hparams.items() if k not in _ROW_KEYS} for r in results]
    keys = differing_keys(hparams, [bool(r.run.problems) for r in results])
    for result, hp in zip(results, hparams, strict=True):
        flat = flatten(hp)
        result.finetune_setting = " ".join(f"{k}={flat[k]}" for k in keys if k in flat)


def _by_task(runs: Sequence[RunSummary]) -> dict[str, list[RunSummary]]:
    """Fine-tune runs by their task (hparams ``task``)."""
    found: dict[str, list[RunSummary]] = {}
    for run in runs:
        found.setdefault(str(run.hparams.get("task")), []).append(run)
    return found


def _label_data(results: list[FinetuneResult]) -> None:
    """``finetune_setting`` gains ``data=<first hex digits>`` where the fine-tunes of its
    task recorded more than one data identity (module docstring); a run without a record
    gains nothing (unknown, not other)."""
    tasks = _by_task([r.run for r in results])
    seen = {
        task: {run.data_identity for run in runs if run.data_identity is not None}
        for task, runs in tasks.items()
    }
    for result in results:
        identity = result.run.data_identity
        if identity is None or len(seen[result.task]) < 2:
            continue
        label = f"{DATA_KEY}={short_identity(identity)}"
        result.finetune_setting = " ".join(x for x in (result.finetune_setting, label) if x)


def downstream_data_notes(runs: Sequence[RunSummary]) -> list[str]:
    """One ``note:`` line per task whose fine-tune ``runs`` recorded different data
    identities (tabled apart, :func:`_label_data`)."""
    notes = (
        data_note(members, f"the {task} fine-tunes") for task, members in _by_task(runs).items()
    )
    return [note for note in notes if note is not None]
