"""Labelled examples of a task: ``Example(text, text_pair, label)`` lists from local files,
the shipped offline task, or the GLUE datasets.

Local files (``data.train_files`` / ``data.val_files``: a path, a glob or a list of these)
are ``.csv``, ``.tsv`` (a header row names the columns) or ``.jsonl`` (one object per line),
each optionally ``.gz``, ``.xz`` or ``.zst``-compressed. They are read through the corpus
readers' guarded layer (:func:`roformer_lit.data.sources.open_input` and
:func:`~roformer_lit.data.sources.guarded`): any failure while reading a file (a corrupt or
truncated compressed stream, invalid UTF-8, a CSV field over ``csv.field_size_limit``, a
binary file: a NUL character) is one ConfigError line naming it, and a file is used only once
read to its end.

Every record, whatever its source, goes through :func:`example_from_record`: the text (and
the pair) must be strings (a JSON ``null``, number, object or list is refused, as
pretraining refuses it), the label a finite number (``3``, ``"3"``, ``3.0``, ``"0.25"``; not
a boolean; a string of ASCII digits without ``_``) of magnitude below :data:`LABEL_LIMIT`.
A column or JSON key that is read but named twice (a reader would keep the last), a TSV
value that spans lines and holds tabs (rows swallowed by an unbalanced quote), a quote
that nothing closes before the end of the file (:mod:`roformer_lit.csv_records`) and a
file whose every text is blank are refused too. Every problem names the file and the row.
A quoted text over several lines, one of which reads as an example of its own, is kept
with a ``note:`` naming the line where its quote opened (a missing closing quote may have
merged rows into it up to the next quote).
"""

from __future__ import annotations

import functools
import io
import json
import os
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from roformer_lit.csv_records import ClosedQuotesReader, inner_rows
from roformer_lit.data.sources import (
    COMPRESSIONS,
    compression_of,
    describe_exception,
    expand_paths,
    guarded,
    open_input,
)
from roformer_lit.errors import ConfigError
from roformer_lit.training.lightning_compat import launch_rank

#: Supported local file endings.
LOCAL_EXTENSIONS: tuple[str, ...] = tuple(
    e + c for e in (".csv", ".tsv", ".jsonl") for c in COMPRESSIONS
)
#: Where the shipped offline task lives.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "data" / "tasks"
#: Largest label magnitude accepted (float32's largest finite value: labels become float32
#: regression targets or int64 class indices).
LABEL_LIMIT = 3.4028234663852886e38


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


def _text_lines(lines: Iterable[str], path: Path) -> Iterator[str]:
    """The lines of a task file; a NUL character means a binary file, not UTF-8 text."""
    for number, line in enumerate(lines, 1):
        if "\x00" in line:
            raise ConfigError(
                f"{path}:{number}: NUL character: the file looks binary, expected UTF-8 text"
            )
        yield line


#: (line number, the values read from it alone) of a line inside a record's quoted text.
InnerRow = tuple[int, Mapping[str, str]]


class _Record(NamedTuple):
    """A record of a task file: the lines it was read from (first, last), its row, and the
    lines inside its text that read as rows of their own
    (:func:`~roformer_lit.csv_records.inner_rows`; none in a JSONL file)."""

    first: int
    last: int
    row: Mapping[Any, Any]
    inner: list[InnerRow]


def _rows(path: Path, fields: Collection[str]) -> Iterator[_Record]:
    """The records of a CSV / TSV / JSONL file (possibly compressed); a column or key of
    ``fields`` given twice in the header or an object, and a quote that nothing closes
    before the end of the file (:func:`~roformer_lit.csv_records.check_closed`), are
    refused."""
    unique_object = functools.partial(_unique_object, fields=fields)
    compression = compression_of(path)
    name = path.name.lower().removesuffix(compression)
    with open_input(path, compression, "task") as raw:
        text = _text_lines(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), path)
        if name.endswith(".jsonl"):
            for number, line in enumerate(text, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line, object_pairs_hook=unique_object)
                except ConfigError as exc:  # a key given twice
                    raise ConfigError(f"{path}:{number}{exc}") from None
                except (ValueError, RecursionError) as exc:  # also an over-long integer
                    detail = (
                        exc.msg
                        if isinstance(exc, json.JSONDecodeError)
                        else describe_exception(exc)
                    )
                    raise ConfigError(f"{path}:{number}: not JSON ({detail})") from None
                if not isinstance(row, dict):
                    raise ConfigError(
                        f"{path}:{number}: not a JSON object (got {type(row).__name__})"
                    )
                yield _Record(number, number, row, [])
            return
        delimiter = "\t" if name.endswith(".tsv") else ","
        reader = ClosedQuotesReader(text, str(path), delimiter=delimiter)
        header = reader.fieldnames or []
        _check_unique(header, fields, f"{path}:1", "the header names column")
        reader.lines.take()
        for row in reader:
            taken = reader.lines.take()
            if name.endswith(".tsv"):
                _check_not_swallowed(row, f"{path}:{taken[0][0]}")
            inner = inner_rows(taken, delimiter, len(header))
            rows = [(n, dict(zip(header, v, strict=True))) for n, v in inner]
            yield _Record(taken[0][0], reader.line_num, row, rows)


def _check_not_swallowed(row: Mapping[Any, Any], where: str) -> None:
    """Refuse a TSV value holding both a tab and a line break: a field that starts with a
    quote (``"Hello," he said``, common in unquoted TSVs such as GLUE's) is read as quoted,
    so an unbalanced one swallows the following rows, their tabs and labels included, into
    one text up to the next quote. A tab inside a line-spanning text is all but unknown in
    a TSV written quoted (a CSV has no such tell: commas and line breaks in quoted text are
    common)."""
    for key, value in row.items():
        if isinstance(value, str) and "\t" in value and "\n" in value:
            raise ConfigError(
                f"{where}: the value of {key!r} spans lines and holds tabs "
                f'({_show(value)}): a quote (") at the start of a field opened a quoted value '
                "that swallowed the rows after it; write the file with every field quoted, "
                "or without a field that starts with an unbalanced quote"
            )


def _check_unique(names: Iterable[Any], fields: Collection[str], where: str, what: str) -> None:
    """Refuse a name of ``fields`` given twice (a CSV header's column, a JSON object's key):
    a reader keeps the last value without a word, so the example would read the wrong
    column. Other names (unread columns, a spreadsheet's empty trailing ones) may repeat."""
    seen: set[Any] = set()
    for name in names:
        if name in seen and name in fields:
            raise ConfigError(
                f"{where}: {what} {name!r} twice; each name must be given once (rename or drop one)"
            )
        seen.add(name)


def _unique_object(pairs: list[tuple[str, Any]], fields: Collection[str]) -> dict[str, Any]:
    """``json.loads``'s object hook: a JSON object, refusing a key of ``fields`` given
    twice."""
    _check_unique((key for key, _ in pairs), fields, "", "the object has key")
    return dict(pairs)


def _show(value: Any) -> str:
    """``repr(value)``, shortened to a few dozen characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any, where: str, field: str) -> str:
    """A text field's value: a string (possibly empty); null, numbers, objects are refused."""
    if value is None:
        raise ConfigError(
            f"{where}: {field} is null or missing (a JSON null, or a CSV row with fewer "
            "values than the header); every example needs its text"
        )
    if not isinstance(value, str):
        raise ConfigError(
            f"{where}: {field} must be a string, got {type(value).__name__} {_show(value)}"
        )
    return value


def _label(value: Any, where: str, field: str) -> int | float:
    """An int label (``3``, ``"3"``, ``3.0``) or a float one (``"0.25"``), finite and of
    magnitude at most :data:`LABEL_LIMIT`."""
    if isinstance(value, bool) or value is None or value == "":
        raise ConfigError(f"{where}: {field}={_show(value)} is not a number")
    if isinstance(value, str) and ("_" in value or not value.isascii()):
        # float() reads "1_0" as 10 and other scripts' digits ("\u0661") as theirs
        raise ConfigError(
            f"{where}: {field}={_show(value)} is not a number (write digits 0-9, no '_')"
        )
    if isinstance(value, int):
        number: float = value
    else:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{where}: {field}={_show(value)} is not a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ConfigError(f"{where}: {field}={_show(value)} is not a finite number")
    if abs(number) > LABEL_LIMIT:
        raise ConfigError(
            f"{where}: {field}={_show(value)} is out of range (labels are class indices, or "
            f"regression targets of magnitude at most {LABEL_LIMIT:.3g})"
        )
    if isinstance(value, int):
        return value
    return int(number) if number.is_integer() and "." not in str(value) else number


def example_from_record(
    record: Mapping[Any, Any],
    text_field: str,
    text_pair_field: str | None,
    label_field: str,
    where: str,
) -> Example:
    """The one check of a fine-tuning record (a CSV/TSV row, a JSON object, a dataset row):
    every named field present, the texts strings, the label a finite number within
    :data:`LABEL_LIMIT`; ConfigError naming ``where`` (file and row) otherwise."""
    if None in record:  # csv.DictReader's key for values beyond the header's columns
        raise ConfigError(
            f"{where}: the row has more values than the header has columns (a text with an "
            "unquoted comma or tab?)"
        )
    for field in (text_field, text_pair_field, label_field):
        if field is not None and field not in record:
            raise ConfigError(
                f"{where}: no column {field!r} (it has: {', '.join(map(str, record))}); "
                "set data.text_field, data.text_pair_field, data.label_field"
            )
    text = _text(record[text_field], where, text_field)
    pair = (
        None if text_pair_field is None else _text(record[text_pair_field], where, text_pair_field)
    )
    return Example(text, pair, _label(record[label_field], where, label_field))


def read_local(
    paths: Sequence[Path], text_field: str, text_pair_field: str | None, label_field: str
) -> list[Example]:
    """Every example of ``paths``; refuses a file without examples, a missing column, a bad
    record (:func:`example_from_record`) or a file that cannot be read to its end."""
    examples: list[Example] = []
    fields = (text_field, text_pair_field, label_field)
    named = {f for f in fields if f is not None}
    for path in paths:
        count = 0
        swallowed: list[tuple[_Record, InnerRow]] = []
        for record in guarded(f"task file {path}", _rows(path, named)):
            examples.append(example_from_record(record.row, *fields, f"{path}:{record.last}"))
            count += 1
            swallowed += [(record, i) for i in record.inner if _is_example(i[1], fields)]
        if count == 0:
            raise ConfigError(f"{path} holds no examples (an empty file, or a header only)")
        _check_some_text(examples[-count:], path, text_field, text_pair_field)
        if swallowed and launch_rank() in (None, 0):
            print(_swallowed_note(path, swallowed), file=sys.stderr, flush=True)
    return examples


def _is_example(row: Mapping[str, str], fields: tuple[str, str | None, str]) -> bool:
    """Whether ``row`` passes :func:`example_from_record`."""
    try:
        example_from_record(row, *fields, "")
    except ConfigError:
        return False
    return True


def _swallowed_note(path: Path, swallowed: Sequence[tuple[_Record, InnerRow]]) -> str:
    """The ``note:`` for rows likely swallowed into a quoted text: (a record read over
    several lines, a line inside its text that reads as an example of its own), the first
    named. Not refused: a quoted text may hold such a line."""
    record, (line, row) = swallowed[0]
    key = next((k for k, v in record.row.items() if isinstance(v, str) and "\n" in v), None)
    more = len({r.first for r, _ in swallowed}) - 1
    others = f" ({more} more such row(s) in the file)" if more else ""
    return (
        f"note: {path}:{record.first}: the quoted value of {key!r} that opens here runs to "
        f"line {record.last}, and line {line} inside it ({_show(','.join(row.values()))}) "
        f'reads as an example of its own: if a closing quote (") is missing on line '
        f"{record.first}, the rows up to line {record.last} were read as one text{others}; "
        "check the file"
    )


def _check_some_text(
    examples: Sequence[Example], path: Path, text_field: str, text_pair_field: str | None
) -> None:
    """Refuse a file whose every text (or every second text) is empty or whitespace: the
    encoder would see ``[CLS] [SEP]`` alone and a fine-tune would measure nothing (a column
    exported empty, or the wrong one named). A blank text here and there is kept."""
    for field, texts in (
        (text_field, (e.text for e in examples)),
        (text_pair_field, (e.text_pair or "" for e in examples)),
    ):
        if field is not None and not any(t.strip() for t in texts):
            raise ConfigError(
                f"{path}: every {field} is empty or whitespace ({len(examples)} examples); "
                "check the file, and data.text_field / data.text_pair_field"
            )


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
    """Examples from a column-addressable table (a ``datasets.Dataset``, a dict of lists),
    each checked by :func:`example_from_record`."""
    columns = list(getattr(rows, "column_names", None) or rows.keys())
    for field in (text_field, text_pair_field, label_field):
        if field is not None and field not in columns:
            raise ConfigError(f"{source}: no column {field!r} (it has: {', '.join(columns)})")
    fields = [f for f in (text_field, text_pair_field, label_field) if f is not None]
    values = [rows[f] for f in fields]
    if len(values[0]) == 0:
        raise ConfigError(f"{source} holds no examples")
    return [
        example_from_record(
            dict(zip(fields, record, strict=True)),
            text_field,
            text_pair_field,
            label_field,
            f"{source}[{i}]",
        )
        for i, record in enumerate(zip(*values, strict=True))
    ]
