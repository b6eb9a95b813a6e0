"""Reading the raw outputs, refusing a damaged one in one line.

Every reader of the studies goes through :func:`read_text` (a file that is missing,
unreadable or not UTF-8 text: binary) and, for CSV files, :func:`csv_rows` (a header
without a column the study reads, a row with fewer or more fields than the header, a field
that is not the number it must be, and, for an ``extrapolate --csv`` or ``--budget`` file,
a row of another split than the study reports: :data:`~roformer_lit.results.extrapolate_rows.SPLIT_COLUMN`,
which files from before the column lack). Each refusal is a
:class:`~roformer_lit.errors.ConfigError` naming the file and, where there is one, the line:
``scripts/study_pages.py`` prints it as one ``error:`` line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from roformer_lit.csv_records import ClosedQuotesReader
from roformer_lit.errors import ConfigError
from roformer_lit.results.extrapolate_columns import SPLIT_COLUMN

#: A column's conversion: the text of a field -> its value (raises ValueError if it is not).
Convert = Callable[[str], Any]


def read_text(path: Path) -> str:
    """The file's text; ConfigError if it cannot be read or is not UTF-8 text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text (a binary file?)") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise ConfigError(f"{path}: line {line}: a NUL byte (a binary file?)")
    return text


def optional(convert: Convert) -> Convert:
    """``convert``, with an empty field read as ``None``."""
    return lambda text: convert(text) if text else None


def csv_rows(
    path: Path, columns: Mapping[str, Convert], split: str | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of a CSV file as dicts, each of ``columns`` converted (other columns as
    text); ConfigError naming the file and line of the first damage. With ``split`` (an
    ``extrapolate`` file: ``test`` for held-out sequences, ``val`` for a corpus run's
    validation text), a row whose :data:`SPLIT_COLUMN` says another split is refused (the
    study would report numbers of sequences it does not say); a file without the column,
    written before ``extrapolate`` recorded it, is read as that split."""
    reader = ClosedQuotesReader(io.StringIO(read_text(path), newline=""), str(path))
    try:
        header = reader.fieldnames or []
        missing = [name for name in columns if name not in header]
        if missing:
            raise ConfigError(
                f"{path}: line 1: no column {', '.join(missing)} (header: {', '.join(header)})"
            )
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if None in row:
                raise ConfigError(f"{where}: more fields than the header's {len(header)}")
            short = [name for name, value in row.items() if value is None]
            if short:
                raise ConfigError(
                    f"{where}: {len(header) - len(short)} of {len(header)} fields "
                    "(a truncated file?)"
                )
            for name, convert in columns.items():
                try:
                    row[name] = convert(row[name])
                except ValueError:
                    raise ConfigError(
                        f"{where}: column {name} is not {_kind(convert)}: {row[name]!r}"
                    ) from None
            if split is not None and SPLIT_COLUMN in header and row[SPLIT_COLUMN] != split:
                raise ConfigError(
                    f"{where}: {SPLIT_COLUMN} {row[SPLIT_COLUMN]!r}, the study reads split "
                    f"{split!r} (write the file with extrapolate --split {split})"
                )
            yield row
    except csv.Error as exc:
        raise ConfigError(f"{path}: line {reader.line_num}: {exc}") from None


def _kind(convert: Convert) -> str:
    return {int: "an integer", float: "a number"}.get(convert, "a valid value")  # type: ignore[call-overload]
