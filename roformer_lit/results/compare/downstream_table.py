"""The downstream comparison as text: a markdown table and CSV files.

Markdown columns: ``task``, ``variant`` (pretraining variant, then any fine-tuning setting
that differs), ``pretrain seeds``, ``fine-tune seeds``, the pretrained runs' ``MLM final
val/loss`` and ``MLM best val/loss`` (mean ± std over pretraining seeds), then for every
metric of the tasks shown (the main one first) ``val/<m> ± fine-tune`` and
``val/<m> ± pretrain``: the same mean with the std over fine-tuning seeds and over
pretraining seeds (definitions: :mod:`roformer_lit.results.compare.downstream`); a ``note`` column
when a row has notes. The CSV has the same numbers at full precision, mean and stds in
their own columns.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from roformer_lit.results.compare.downstream import DownstreamRow
from roformer_lit.results.compare.table import NOTE, _md_line, format_stat

DECIMALS = 4
MLM = {"final_val_loss": "MLM final val/loss", "best_val_loss": "MLM best val/loss"}


def metric_names(rows: Sequence[DownstreamRow]) -> list[str]:
    """Every metric of ``rows``, main metrics first, in order of appearance."""
    mains = [row.main_metric for row in rows]
    return list(dict.fromkeys([*mains, *(m for row in rows for m in row.metric_names)]))


def _seeds(seeds: Sequence[int | None]) -> str:
    return " ".join("?" if s is None else str(s) for s in seeds)


def to_markdown(rows: Sequence[DownstreamRow]) -> str:
    """One line per (task, variant); see the module docstring for the columns."""
    metrics = metric_names(rows)
    with_notes = any(row.notes for row in rows)
    columns = ["task", "variant", "pretrain seeds", "fine-tune seeds", *MLM.values()]
    for m in metrics:
        columns += [f"val/{m} ± fine-tune", f"val/{m} ± pretrain"]
    if with_notes:
        columns.append(NOTE)
    align = ["---", "---"] + ["---:"] * (len(columns) - 2 - with_notes) + ["---"] * with_notes
    lines = [_md_line(columns), _md_line(align)]
    for row in rows:
        cells = [
            row.task,
            row.variant,
            f"{len(row.checkpoints)} ({_seeds(row.pretrain_seeds) or '?'})",
            f"{len(row.results)} ({_seeds(row.finetune_seeds)})",
            *(format_stat(row.mlm[m], DECIMALS) for m in MLM),
        ]
        for m in metrics:
            if m in row.stats:
                cells += [format_stat(s, DECIMALS) for s in row.stats[m]]
            else:
                cells += ["–", "–"]
        if with_notes:
            cells.append("; ".join(row.notes))
        lines.append(_md_line(cells))
    return "\n".join(lines)


def csv_columns(rows: Sequence[DownstreamRow]) -> list[str]:
    columns = ["task", "variant", "position", "attention", "n_pretrain_seeds", "pretrain_seeds"]
    columns += ["n_finetune_runs", "finetune_seeds"]
    columns += [f"mlm_{m}_{part}" for m in MLM for part in ("mean", "std")]
    for m in metric_names(rows):
        columns += [f"{m}_mean", f"{m}_std_finetune", f"{m}_std_pretrain"]
    return [*columns, NOTE]


def to_csv(rows: Sequence[DownstreamRow]) -> str:
    """One CSV line per row of :func:`to_markdown`, full precision."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_columns(rows), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        first = row.pretrained_runs[0] if row.pretrained_runs else None
        record: dict[str, object] = {
            "task": row.task,
            "variant": row.variant,
            "position": first.position if first else "",
            "attention": first.attention if first else "",
            "n_pretrain_seeds": len(row.checkpoints),
            "pretrain_seeds": _seeds(row.pretrain_seeds),
            "n_finetune_runs": len(row.results),
            "finetune_seeds": _seeds(row.finetune_seeds),
            NOTE: "; ".join(row.notes),
        }
        for m in MLM:
            record[f"mlm_{m}_mean"] = _number(row.mlm[m].mean)
            record[f"mlm_{m}_std"] = _number(row.mlm[m].std)
        for m, (finetune, pretrain) in row.stats.items():
            record[f"{m}_mean"] = _number(finetune.mean)
            record[f"{m}_std_finetune"] = _number(finetune.std)
            record[f"{m}_std_pretrain"] = _number(pretrain.std)
        writer.writerow(record)
    return buffer.getvalue()


def runs_csv(rows: Sequence[DownstreamRow]) -> str:
    """One CSV line per fine-tune run: its row, pretrained run, seeds and best metrics."""
    metrics = metric_names(rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["task", "variant", "pretrained", "pretrain_seed", "finetune_seed", "path", *metrics]
    )
    for row in rows:
        for r in row.results:
            seed = r.pretrained_run.seed if r.pretrained_run else None
            writer.writerow(
                [row.task, row.variant, r.pretrained, "" if seed is None else seed]
                + ["" if r.run.seed is None else r.run.seed, str(r.run.path)]
                + [_number(r.metrics.get(m)) for m in metrics]
            )
    return buffer.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)
