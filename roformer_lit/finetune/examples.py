"""Labelled examples of a task: ``Example(text, text_pair, label)`` lists from local files,
the shipped offline task, or the GLUE datasets.

Local files (``data.train_files`` / ``data.val_files``: a path, a glob or a list of these)
are ``.csv``, ``.tsv`` (a header row names the columns) or ``.jsonl`` (one object per line),
each optionally ``.gz``-compressed. Every problem (a missing file or column, an empty file,
a label that is not a number) is a ConfigError of one line naming the file and the row.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from roformer_lit.data.sources import expand_paths
from roformer_lit.errors import ConfigError

#: Supported local file endings.
LOCAL_EXTENSIONS: tuple[str, ...] = tuple(
    e + c for e in (".csv", ".tsv", ".jsonl") for c in ("", ".gz")
)
#: Where the shipped offline task lives.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "data" / "tasks"


@dataclass(frozen=True)
class Example:
    """One labelled example; ``label`` is an int (classification) or a float (regression)."""

    text: str
    text_pair: str | None
    label: int | float


def expand_task_files(spec: str | os.PathLike[str] | Sequence[Any], option: str) -> list[Path]:
    """The task files named by ``spec`` (a path, a glob, a directory, or a list of these),
    in order: :func:`roformer_lit.data.sources.expand_paths` with the task file endings."""
    return expand_paths(spec, option, LOCAL_EXTENSIONS, kind="task")


def _open_text(path: Path) -> IO[str]:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(line number, row) of a CSV / TSV / JSONL file."""
    name = path.name.lower().removesuffix(".gz")
    try:
        with _open_text(path) as f:
            if name.endswith(".jsonl"):
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ConfigError(f"{path}:{number}: not JSON ({exc.msg})") from None
                    if not isinstance(row, dict):
                        raise ConfigError(f"{path}:{number}: not a JSON object")
                    yield number, row
                return
            reader = csv.DictReader(f, delimiter="\t" if name.endswith(".tsv") else ",")
            for row in reader:
                yield reader.line_num, row
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _label(value: Any, where: str, field: str) -> int | float:
    """An int label (``3``, ``"3"``, ``3.0``) or a float one (``"0.25"``)."""
    if isinstance(value, bool) or value is None or value == "":
        raise ConfigError(f"{where}: {field}={value!r} is not a number")
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {field}={value!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ConfigError(f"{where}: {field}={value!r} is not a finite number")
    return int(number) if number.is_integer() and "." not in str(value) else number


def read_local(
    paths: Sequence[Path], text_field: str, text_pair_field: str | None, label_field: str
) -> list[Example]:
    """Every example of ``paths``; refuses a file without examples or a missing column."""
    examples: list[Example] = []
    for path in paths:
        count = 0
        for number, row in _rows(path):
            where = f"{path}:{number}"
            for field in (text_field, text_pair_field, label_field):
                if field is not None and field not in row:
                    raise ConfigError(
                        f"{where}: no column {field!r} (it has: {', '.join(map(str, row))}); "
                        "set data.text_field, data.text_pair_field, data.label_field"
                    )
            pair = None if text_pair_field is None else str(row[text_pair_field] or "")
            label = _label(row[label_field], where, label_field)
            examples.append(Example(str(row[text_field] or ""), pair, label))
            count += 1
        if count == 0:
            raise ConfigError(f"{path} holds no examples (an empty file, or a header only)")
    return examples


def read_shipped(task: str, split: str) -> list[Example]:
    """The shipped offline task's ``split`` (``train`` or ``validation``)."""
    path = SHIPPED_DIR / task / f"{split}.jsonl.gz"
    return read_local([path], "text", None, "label")


def read_glue(
    task: str, split: str, text_field: str, text_pair_field: str | None, label_field: str
) -> list[Example]:
    """A GLUE task's split from ``nyu-mll/glue`` through HF ``datasets`` (downloaded once and
    cached by ``datasets``; imported only here)."""
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            f"data.task={task!r} needs the 'datasets' package (pip install datasets)"
        ) from None
    from roformer_lit.finetune.tasks import GLUE_DATASET

    try:
        rows = datasets.load_dataset(GLUE_DATASET, task, split=split)
    except Exception as exc:  # offline, unknown split: one line
        detail = " ".join(str(exc).split())[:200]
        raise ConfigError(f"cannot load {GLUE_DATASET} {task} {split}: {detail}") from None
    return examples_from_rows(rows, text_field, text_pair_field, label_field, f"{task}/{split}")


def examples_from_rows(
    rows: Any, text_field: str, text_pair_field: str | None, label_field: str, source: str
) -> list[Example]:
    """Examples from a column-addressable table (a ``datasets.Dataset``, a dict of lists)."""
    columns = list(getattr(rows, "column_names", None) or rows.keys())
    for field in (text_field, text_pair_field, label_field):
        if field is not None and field not in columns:
            raise ConfigError(f"{source}: no column {field!r} (it has: {', '.join(columns)})")
    texts = rows[text_field]
    pairs = rows[text_pair_field] if text_pair_field is not None else [None] * len(texts)
    labels = rows[label_field]
    if len(texts) == 0:
        raise ConfigError(f"{source} holds no examples")
    return [
        Example(str(t), None if p is None else str(p), _label(y, f"{source}[{i}]", label_field))
        for i, (t, p, y) in enumerate(zip(texts, pairs, labels, strict=True))
    ]
