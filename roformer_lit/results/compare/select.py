"""``compare LOGDIR --select KEY --by METRIC``: each group of runs at its own best ``KEY``.

A **group** is every run that agrees on every hyperparameter but ``KEY`` and the seeds (the
variant label ``compare`` gives the runs once ``KEY`` is left out). Per group and value
``v`` of ``KEY``, the **selection score** is the mean over seeds of ``METRIC`` as the run
logged it during training: its validation metric at the training length, on validation
sequences (:data:`SELECTION_METRICS`; ``min`` for losses and perplexity, ``max`` for
accuracy and exact match). The chosen value is the best score (ties: the first value in
sorted order); a value some seed did not log the metric for, or whose runs have not all
validated at their last step (:attr:`RunSummary.finished`, by steps or by epochs: still
training, stopped, crashed), is not a candidate: its mean would be over another length or fewer seeds.

The **reported evaluation** is a different one, never read by the selection: the long CSV
``extrapolate --split test --csv FILE`` writes (held-out sequences from another generator
stream at the lengths one reports), given as ``--report FILE``. Only the chosen value's
runs are looked up there (a checkpoint row belongs to the run whose ``checkpoints/`` holds
it). The file must hold that split: each row names its ``split`` (the column
``extrapolate --csv`` writes), and a file of another split (``extrapolate --split val``:
the validation sequences the selection was made on) is refused in one line; a file from
before the column (it names no split) is read as the test split, with one ``warning:``
line saying so (:func:`check_split`). :func:`select` takes run summaries alone; :func:`reported` takes the chosen runs and the
CSV rows, so the choice cannot depend on the reported numbers (a test builds runs whose
best value differs between the two and checks which is chosen).

Every mean comes with its 95 % Student-t interval over seeds
(:func:`roformer_lit.results.statistics.mean_interval`).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roformer_lit.csv_records import ClosedQuotesReader
from roformer_lit.errors import ConfigError
from roformer_lit.plan_identity import plain
from roformer_lit.results.compare.aggregate import METRICS, once_per_seed
from roformer_lit.results.compare.runs import Report, RunSummary
from roformer_lit.results.compare.table import RANGES, _md_line
from roformer_lit.results.compare.variants import (
    IGNORED_KEYS,
    comparable,
    differing_keys,
    flatten,
    format_value,
    identity,
    variant_labels,
)
from roformer_lit.results.extrapolate_columns import SPLIT_COLUMN
from roformer_lit.results.statistics import Interval, mean_interval
from roformer_lit.run_files import warn

#: ``--by`` name -> (RunSummary attribute, which is better).
SELECTION_METRICS: dict[str, tuple[str, Callable[[Sequence[float]], float]]] = {
    "val_loss": ("final_val_loss", min),
    "final_val_loss": ("final_val_loss", min),
    "best_val_loss": ("best_val_loss", min),
    "val_ppl": ("val_ppl", min),
    "val_acc": ("val_acc", max),
    "val_exact": ("val_exact", max),
}
#: ``--by`` as every table, log line and TensorBoard tag names the metric -> its name above.
LOGGED_NAMES = {
    "val/loss": "val_loss",
    "val/best_loss": "best_val_loss",
    "val/ppl": "val_ppl",
    "val/acc": "val_acc",
    "val/exact": "val_exact",
}


def selection_metric(by: str) -> str:
    """``--by`` as a key of :data:`SELECTION_METRICS` (the logged name ``val/acc`` is
    ``val_acc``), or a one-line ConfigError naming both spellings."""
    name = LOGGED_NAMES.get(by, by)
    if name not in SELECTION_METRICS:
        valid = ", ".join([*SELECTION_METRICS, *LOGGED_NAMES])
        raise ConfigError(f"compare: --by {by} is not a selection metric: valid: {valid}")
    return name


def hashable(value: Any) -> Any:
    """A hyperparameter's value as a dict key: lists as tuples, mappings as sorted
    ``(key, value)`` tuples, all the way down (``layer_plan.pattern`` is a list)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(hashable(v) for v in value)
    return value


def _key_shown(value: Any) -> Any:
    """A candidate value as a dict key of :attr:`SelectedGroup.candidates`: a scalar as
    itself, a list or mapping as :func:`shown` writes it."""
    return shown(value) if isinstance(value, (Mapping, list, tuple)) else value


def shown(value: Any) -> str:
    """A chosen or candidate value as the tables write it: a scalar as itself, a list or
    mapping as compact JSON (``["global","local"]``)."""
    if isinstance(value, (Mapping, list, tuple)):
        return format_value(plain(value))
    return str(value)


@dataclass
class SelectedGroup:
    """One group at its chosen value of the key."""

    group: str
    key: str
    value: Any
    runs: list[RunSummary]
    #: ``value -> (mean selection score, seeds)`` of every candidate value.
    candidates: dict[Any, tuple[float, int]]
    #: ``metric -> interval`` of the chosen runs' logged metrics (:data:`METRICS`).
    stats: dict[str, Interval | None] = field(default_factory=dict)
    #: ``(metric, length) -> interval`` from the reported evaluation.
    report: dict[tuple[str, int], Interval] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def best_value(means: Mapping[Any, float], by: str) -> Any:
    """The value whose mean ``by`` score is best (:data:`SELECTION_METRICS` says whether
    that is the least or the greatest); ties go to the first value in ``sorted(repr)``
    order. The one selection rule: :func:`select` and the study pages both use it."""
    _, best = SELECTION_METRICS[by]
    target = best(means.values())
    return next(v for v in sorted(means, key=repr) if means[v] == target)


#: A layer plan's written key -> the key of its one form
#: (:func:`~roformer_lit.plan_identity.canonical_plan` writes every plan as a pattern).
PLAN_ALIASES = {"layer_plan.layers": "layer_plan.pattern"}


def value_of(flat: Mapping[str, Any], key: str) -> Any:
    """``key``'s value among flattened hyperparameters: the value itself, or, for a key
    holding settings (``layer_plan``, ``position_kwargs``), the mapping of those below it;
    None where the run has neither."""
    if key in flat:
        return flat[key]
    prefix = f"{key}."
    below = {k[len(prefix) :]: v for k, v in flat.items() if k.startswith(prefix)}
    return below or None


def _without(flat: dict[str, Any], key: str) -> dict[str, Any]:
    prefix = f"{key}."
    return {k: v for k, v in flat.items() if k != key and not k.startswith(prefix)}


def resolve_key(key: str, runs: Sequence[RunSummary]) -> str:
    """``KEY`` as the runs' flattened hyperparameters name it (``model.``/``data.`` prefixes
    dropped; a key holding settings, such as ``layer_plan``, selects them together), or a
    ConfigError naming the keys whose values differ between the runs."""
    flats = [flatten(comparable(r.hparams)) for r in runs]
    short = key.removeprefix("model.").removeprefix("data.")
    if short in IGNORED_KEYS:
        raise ConfigError(
            f"compare: --select {key} cannot be selected: seeds are the replicates every "
            "value is averaged over, and the scheme and kernel name the groups; select a "
            "hyperparameter such as learning_rate"
        )
    for candidate in (key, short, PLAN_ALIASES.get(short, short)):
        if any(value_of(f, candidate) is not None for f in flats):
            return candidate
    differing = differing_keys([r.hparams for r in runs])
    raise ConfigError(
        f"compare: --select {key} is no hyperparameter of these runs; keys that differ "
        f"between them: {', '.join(differing) or 'none'}"
    )


def select(
    runs: Sequence[RunSummary], key: str, by: str, report: Report = warn
) -> list[SelectedGroup]:
    """Each group of ``runs`` at the value of ``key`` with the best mean ``by`` (module
    docstring). Reads nothing but the run summaries. A group none of whose values is a
    candidate is left out with one ``report`` line saying why."""
    by = selection_metric(by)
    attribute, _ = SELECTION_METRICS[by]
    key = resolve_key(key, runs)
    identities = []
    for run in runs:
        flat = flatten(comparable(identity(run)))
        identities.append(_without(flat, key))
    labels = variant_labels(identities)
    groups: dict[str, dict[Any, list[RunSummary]]] = {}
    written: dict[Any, Any] = {}  # hashable form -> the value as the runs hold it
    for label, run in zip(labels, runs, strict=True):
        value = value_of(flatten(comparable(run.hparams, every_option=True)), key)
        written.setdefault(hashable(value), value)
        groups.setdefault(label, {}).setdefault(hashable(value), []).append(run)
    selected = []
    for label, by_value in groups.items():
        candidates: dict[Any, tuple[float, int]] = {}
        notes = []
        for value in sorted(by_value, key=repr):
            by_value[value] = once_per_seed(by_value[value])  # each seed counts once
            unfinished = [r for r in by_value[value] if not r.finished]
            if unfinished:  # another length's numbers: never a candidate's mean
                notes += [
                    f"{key}={shown(written[value])}: seed {r.seed} "
                    f"{r.diverged_at if r.diverged else r.progress}, not a candidate"
                    for r in unfinished
                ]
                continue
            scores = [getattr(r, attribute) for r in by_value[value]]
            finite = [s for s in scores if s is not None and math.isfinite(s)]
            if len(finite) < len(scores) or not finite:
                missing = len(scores) - len(finite)
                notes.append(f"{key}={shown(written[value])}: {missing} run(s) without {by}")
                continue
            candidates[value] = (math.fsum(finite) / len(finite), len(finite))
        if not candidates:
            report(
                f"group {label}: no value of {key} is a candidate ({'; '.join(notes)}); left out"
            )
            continue
        chosen = best_value({v: mean for v, (mean, _) in candidates.items()}, by)
        candidates = {_key_shown(written[v]): c for v, c in candidates.items()}
        members = sorted(by_value[chosen], key=lambda r: (r.seed is None, r.seed or 0))
        chosen = written[chosen]
        stats = {}
        for metric in METRICS:
            values = [getattr(r, metric) for r in members]
            finite = [float(v) for v in values if v is not None and math.isfinite(v)]
            stats[metric] = bounded(finite, *RANGES.get(metric, BOUNDLESS)) if finite else None
        notes += [f"seed {r.seed}: {n}" for r in members for n in r.notes]
        selected.append(SelectedGroup(label, key, chosen, members, candidates, stats, {}, notes))
    return selected


#: The split a ``--report`` file must hold: held-out sequences the selection never read.
REPORT_SPLIT = "test"


def check_split(
    path: Path, columns: set[str], rows: Sequence[Mapping[str, str]], report: Report
) -> None:
    """Refuse (one ConfigError line naming the file, the split it holds and
    :data:`REPORT_SPLIT`) a ``--report`` file whose rows are of another split. A file
    without the ``split`` column (written before ``extrapolate`` recorded it) is read as the
    test split, with one ``report`` line saying so."""
    if SPLIT_COLUMN not in columns:
        report(
            f"--report {path} names no split (an extrapolate --csv file from before the "
            f"{SPLIT_COLUMN} column): read as the {REPORT_SPLIT} split; make sure it was "
            f"written with extrapolate --split {REPORT_SPLIT}"
        )
        return
    held = sorted({row[SPLIT_COLUMN] or "" for row in rows})
    if any(split != REPORT_SPLIT for split in held):
        holds = " and ".join(repr(split) for split in held)
        raise ConfigError(
            f"compare: --report {path} holds split {holds}; --report needs split "
            f"{REPORT_SPLIT!r}, held-out sequences the selection never read: write it with "
            f"extrapolate --split {REPORT_SPLIT} --csv FILE"
        )


def read_report(path: Path, report: Report = warn) -> list[dict[str, str]]:
    """The rows of an ``extrapolate --csv`` file of the test split (:func:`check_split`), or
    a one-line ConfigError; so is a run with two values for one metric and length (the
    rows of two evaluations: :func:`reported` would keep whichever came last)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = ClosedQuotesReader(handle, f"compare: --report {path}")
            columns = set(reader.fieldnames or ())
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"compare: cannot read --report {path}: {exc}") from None
    needed = {"name", "length", "metric", "value"}
    if not needed <= columns:
        raise ConfigError(
            f"compare: --report {path} is not an extrapolate --csv file (columns "
            f"{', '.join(sorted(needed))} expected, found {', '.join(sorted(columns)) or 'none'})"
        )
    check_split(path, columns, rows, report)
    seen: dict[tuple[str, str, int], tuple[float, int, str]] = {}
    for line, row in enumerate(rows, start=2):
        try:
            length, value = int(row["length"] or ""), float(row["value"] or "")
        except ValueError:
            raise ConfigError(
                f"compare: --report {path} line {line}: length {row['length']!r} and value "
                f"{row['value']!r} must be an integer and a number"
            ) from None
        if row["name"].startswith("baseline:"):
            continue
        cell = (os.path.realpath(_run_of(row["name"])), row["metric"], length)
        earlier, at, name = seen.setdefault(cell, (value, line, row["name"]))
        if earlier != value:  # one run, two evaluations: never the one that comes last
            raise ConfigError(
                f"compare: --report {path} line {line}: {row['name']} {row['metric']} at "
                f"{length} is {value}, and {earlier} on line {at} ({name}): one run with two "
                "values (two checkpoints, or the rows of two extrapolate calls); give one "
                "evaluation per run"
            )
    return rows


#: The range of each metric an ``extrapolate --csv`` file reports (accuracy and exact match
#: are shares); none for the others.
REPORT_RANGES: dict[str, tuple[float, float]] = {
    "acc": (0.0, 1.0),
    "exact": (0.0, 1.0),
    "loss": (0.0, math.inf),
}
BOUNDLESS = (-math.inf, math.inf)


def bounded(values: Sequence[float], low: float, high: float) -> Interval:
    """The mean of ``values`` and its 95 % t-interval cut to the metric's range ``[low,
    high]`` (a bound outside it says nothing more)."""
    return mean_interval(values).clipped(low, high)


def _run_of(checkpoint: str) -> Path:
    path = Path(checkpoint)
    return path.parent.parent if path.parent.name == "checkpoints" else path.parent


def reported(groups: Sequence[SelectedGroup], rows: Sequence[Mapping[str, str]]) -> None:
    """Fill each group's :attr:`SelectedGroup.report` from the reported evaluation's rows of
    its chosen runs (one value per run, metric and length: the run's last such row)."""
    per_run: dict[str, dict[tuple[str, int], float]] = {}
    for row in rows:
        if row["name"].startswith("baseline:"):
            continue
        run = os.path.realpath(_run_of(row["name"]))
        per_run.setdefault(run, {})[(row["metric"], int(row["length"]))] = float(row["value"])
    for group in groups:
        cells: dict[tuple[str, int], list[float]] = {}
        missing = 0
        for run in group.runs:
            got = per_run.get(os.path.realpath(run.path))
            if got is None:
                missing += 1
                continue
            for cell, value in got.items():
                cells.setdefault(cell, []).append(value)
        group.report = {
            cell: bounded(values, *REPORT_RANGES.get(cell[0], BOUNDLESS))
            for cell, values in sorted(cells.items())
            if len(values) == len(group.runs)
        }
        if missing:
            group.notes.append(f"{missing} of {len(group.runs)} chosen runs not in --report")


def report_column(metric: str, length: int) -> str:
    """``report_<metric>_n<length>``: the prefix of a reported cell's CSV columns."""
    return f"report_{metric}_n{length}"


def to_csv(groups: Sequence[SelectedGroup], by: str) -> str:
    """One row per group: ``group``, the key's column (its chosen value), ``n_seeds``,
    ``seeds``, ``selected_by``, ``candidates`` (each value's mean score), then per metric
    ``<metric>_mean, <metric>_ci_low, <metric>_ci_high`` (the chosen runs' logged metrics:
    these are on the selection split), per reported cell the same three with prefix
    :func:`report_column`, then ``note``."""
    key = groups[0].key if groups else "value"
    cells = sorted({c for g in groups for c in g.report})
    columns = ["group", key, "n_seeds", "seeds", "selected_by", "candidates"]
    for metric in METRICS:
        columns += [f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"]
    for metric, length in cells:
        name = report_column(metric, length)
        columns += [f"{name}_mean", f"{name}_ci_low", f"{name}_ci_high"]
    columns.append("note")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for group in groups:
        record: dict[str, object] = {
            "group": group.group,
            key: shown(group.value) if isinstance(group.value, (Mapping, list)) else group.value,
            "n_seeds": len(group.runs),
            "seeds": " ".join("" if r.seed is None else str(r.seed) for r in group.runs),
            "selected_by": f"mean {by} over seeds (validation, training length)",
            "candidates": "; ".join(
                f"{shown(v)}: {m:.6g} ({n})" for v, (m, n) in group.candidates.items()
            ),
            "note": "; ".join(group.notes),
        }
        for metric in METRICS:
            record.update(_interval_cells(metric, group.stats.get(metric)))
        for cell in cells:
            record.update(_interval_cells(report_column(*cell), group.report.get(cell)))
        writer.writerow(record)
    return buffer.getvalue()


def _interval_cells(prefix: str, interval: Interval | None) -> dict[str, str]:
    if interval is None:
        return {f"{prefix}_mean": "", f"{prefix}_ci_low": "", f"{prefix}_ci_high": ""}
    return {
        f"{prefix}_mean": repr(interval.mean),
        f"{prefix}_ci_low": "" if interval.low is None else repr(interval.low),
        f"{prefix}_ci_high": "" if interval.high is None else repr(interval.high),
    }


def to_markdown(groups: Sequence[SelectedGroup], by: str) -> str:
    """The console table: group, chosen value, seeds, each candidate's mean score, the
    selection metric's interval, and each reported cell as ``mean [low, high]``."""
    key = groups[0].key if groups else "value"
    cells = sorted({c for g in groups for c in g.report})
    attribute = SELECTION_METRICS[selection_metric(by)][0]
    head = ["group", f"{key} (chosen)", "seeds", f"mean {by} per {key}", f"{by} (selection)"]
    head += [f"{metric} n={length} (reported)" for metric, length in cells]
    with_notes = any(group.notes for group in groups)
    head += ["note"] if with_notes else []
    lines = [_md_line(head), "|" + "---|" * len(head)]
    for group in groups:
        interval = group.stats.get(attribute)
        row = [
            group.group,
            shown(group.value),
            str(len(group.runs)),
            ", ".join(f"{shown(v)}: {m:.4f}" for v, (m, _) in group.candidates.items()),
            "–" if interval is None else interval.text(4),
        ]
        row += [group.report[c].text(3) if c in group.report else "–" for c in cells]
        row += ["; ".join(group.notes)] if with_notes else []
        lines.append(_md_line(row))
    return "\n".join(lines)
