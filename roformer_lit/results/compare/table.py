"""The comparison as text: a markdown table and CSV files.

A row whose runs had unreadable files or logged no ``val/loss`` says so in a ``note``
column: the last markdown column (present only when some row has a note) and the last CSV
column (always present, empty when there is nothing to say).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.results.compare.aggregate import METRICS, Stat, VariantRow
from roformer_lit.results.compare.runs import RunSummary
from roformer_lit.results.compare.variants import comparable, differing_keys, flatten
from roformer_lit.results.statistics import CONFIDENCE, t_quantile

#: Decimal places per metric in the markdown table (the CSV keeps full precision).
DECIMALS = {
    "final_val_loss": 4,
    "best_val_loss": 4,
    "val_acc": 4,
    "val_ppl": 2,
    "steps": 0,
    "tokens_per_s": 0,
    "peak_mem_mb": 0,
    "wall_time_s": 1,
}
COLUMNS = ["variant", "seeds", *METRICS.values()]
#: The column appended when a row has notes (and always in the CSV files).
NOTE = "note"


#: Metrics whose markdown cells add the 95 % t-interval of the mean (the measured ones).
WITH_INTERVAL = ("final_val_loss", "best_val_loss", "val_acc", "val_ppl")
#: The range of each bounded metric: the t-interval of a bounded quantity can leave it (two
#: seeds' accuracies 0.000 and 0.028 give [-0.163, 0.190]), and a bound outside the range
#: says nothing more, so its interval is cut to the range, as the study's tables cut theirs
#: (:meth:`roformer_lit.results.statistics.Interval.clipped`).
RANGES: dict[str, tuple[float, float]] = {
    "final_val_loss": (0.0, math.inf),
    "best_val_loss": (0.0, math.inf),
    "val_acc": (0.0, 1.0),
    "val_ppl": (1.0, math.inf),
}


def format_stat(
    stat: Stat, decimals: int, with_interval: bool = False, metric: str | None = None
) -> str:
    """``mean ± std`` (with ``with_interval``: ``mean ± std [low, high]``, the 95 %
    t-interval, cut to ``metric``'s range); the mean alone with one run; ``–`` if no run
    logged it."""
    if stat.mean is None:
        return "–"
    if stat.std is None:
        return f"{stat.mean:.{decimals}f}"
    text = f"{stat.mean:.{decimals}f} ± {stat.std:.{decimals}f}"
    low, high = interval(stat, metric)
    if with_interval and low is not None and high is not None:
        text += f" [{low:.{decimals}f}, {high:.{decimals}f}]"
    return text


def format_seeds(row: VariantRow) -> str:
    """``n (seeds)`` of the runs averaged, then ``+ k unfinished`` where some are not and
    ``+ k diverged`` where some stopped on a non-finite loss."""
    seeds = ", ".join("?" if s is None else str(s) for s in row.seeds)
    text = f"{row.n} ({seeds})" if row.runs else "0"
    text += f" + {len(row.unfinished)} unfinished" if row.unfinished else ""
    return text + (f" + {len(row.diverged)} diverged" if row.diverged else "")


def to_markdown(rows: Sequence[VariantRow]) -> str:
    """One line per variant; columns :data:`COLUMNS`, values ``mean ± std`` over seeds (the
    validation metrics also ``[low, high]``, the 95 % t-interval of the mean), and a final
    :data:`NOTE` column if any row has notes."""
    with_notes = any(row.notes for row in rows)
    columns = [*COLUMNS, NOTE] if with_notes else COLUMNS
    align = ["---"] + ["---:"] * (len(COLUMNS) - 1) + (["---"] if with_notes else [])
    lines = [_md_line(columns), _md_line(align)]
    for row in rows:
        cells = [row.variant, format_seeds(row)]
        cells += [format_stat(row.stats[m], DECIMALS[m], m in WITH_INTERVAL, m) for m in METRICS]
        if with_notes:
            cells.append("; ".join(row.notes))
        lines.append(_md_line(cells))
    return "\n".join(lines)


def evaluation_markdown(runs: Sequence[RunSummary]) -> str:
    """Evaluation-only runs (validate/test), one line each: where, val/loss, val/acc (and a
    note column if a run has notes)."""
    with_notes = any(run.notes for run in runs)
    header = ["evaluation run", "val/loss", "val/acc", "val/ppl"] + ([NOTE] if with_notes else [])
    lines = [_md_line(header)]
    lines.append(_md_line(["---", "---:", "---:", "---:"] + (["---"] if with_notes else [])))
    for run in runs:
        values = [run.final_val_loss, run.val_acc, run.val_ppl]
        cells = [str(run.path), *("–" if v is None else f"{v:.4f}" for v in values)]
        lines.append(_md_line(cells + (["; ".join(run.notes)] if with_notes else [])))
    return "\n".join(lines)


def _hparam_columns(rows: Sequence[VariantRow]) -> list[str]:
    return differing_keys([r.first.hparams for r in rows]) if rows else []


def csv_columns(rows: Sequence[VariantRow]) -> list[str]:
    """``variant, n_seeds, seeds, position, attention``, the hyperparameters that differ
    between variants, ``<metric>_mean, <metric>_std, <metric>_ci_low, <metric>_ci_high``
    for every metric of METRICS (the 95 % Student-t interval of the mean over seeds, empty
    with one seed), then ``note``."""
    parts = ("mean", "std", "ci_low", "ci_high")
    metric_columns = [f"{m}_{part}" for m in METRICS for part in parts]
    return ["variant", "n_seeds", "seeds", "position", "attention"] + (
        _hparam_columns(rows) + metric_columns + [NOTE]
    )


def to_csv(rows: Sequence[VariantRow]) -> str:
    """One CSV line per variant: mean and std of every metric as separate columns, the
    variant's hyperparameters that differ between variants as their own columns."""
    columns, hparam_columns = csv_columns(rows), _hparam_columns(rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        flat = flatten(comparable(row.first.hparams))
        record: dict[str, object] = {
            "variant": row.variant,
            "n_seeds": row.n,
            "seeds": " ".join("" if s is None else str(s) for s in row.seeds),
            "position": row.position,
            "attention": row.attention,
        }
        record.update({k: flat.get(k, "") for k in hparam_columns})
        for metric in METRICS:
            stat = row.stats[metric]
            record[f"{metric}_mean"] = "" if stat.mean is None else repr(stat.mean)
            record[f"{metric}_std"] = "" if stat.std is None else repr(stat.std)
            low, high = interval(stat, metric)
            record[f"{metric}_ci_low"] = "" if low is None else repr(low)
            record[f"{metric}_ci_high"] = "" if high is None else repr(high)
        record[NOTE] = "; ".join(row.notes)
        writer.writerow(record)
    return buffer.getvalue()


def interval(stat: Stat, metric: str | None = None) -> tuple[float | None, float | None]:
    """The 95 % Student-t interval of ``stat``'s mean: ``mean ∓ t_{0.975, n-1} std / sqrt(n)``,
    cut to ``metric``'s range (:data:`RANGES`; none for other metrics) (None, None with
    fewer than two runs)."""
    if stat.mean is None or stat.std is None or stat.n < 2:
        return None, None
    half = t_quantile(0.5 + CONFIDENCE / 2, stat.n - 1) * stat.std / stat.n**0.5
    floor, ceiling = RANGES.get(metric or "", (-math.inf, math.inf))
    return max(stat.mean - half, floor), min(stat.mean + half, ceiling)


def runs_csv(runs: Sequence[RunSummary]) -> str:
    """One CSV line per run (variant, seed, path, every metric, note), for one's own
    statistics."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["variant", "seed", "path", *METRICS, NOTE])
    for run in runs:
        values = [getattr(run, m) for m in METRICS]
        writer.writerow(
            [run.variant, "" if run.seed is None else run.seed, str(run.path)]
            + ["" if v is None else repr(v) for v in values]
            + ["; ".join(run.notes)]
        )
    return buffer.getvalue()


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path


def _md_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
