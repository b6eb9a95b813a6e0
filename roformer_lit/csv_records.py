"""Reading CSV and TSV text so that an unbalanced quote never swallows rows unseen.

A field that starts with a quote (``"``) is quoted: commas, tabs and line breaks up to its
closing quote are its text. One whose closing quote is missing takes the rows after it
into its text, up to the next quote in the file or to the end of the file. Python's
``csv`` reader returns what it has either way, without a word; with ``strict=True`` it
raises at the end of the file, but it then also refuses ``"a" b`` (read as ``a b``
otherwise), which hand-written files hold. So the reader stays lenient, is fed its lines
through :class:`RecordLines` (:class:`ClosedQuotesReader` does both for a
``csv.DictReader``), and the two cases are told apart after each record:

* the quote ran to the end of the file: the reader asked for a line after the last one
  to finish the record, which a closed record never does. Nothing can have closed the
  quote; :func:`check_closed` refuses it, naming the line where the quote opened.
* the quote closed lines later: legal (a quoted text over several lines) or a missing
  quote that swallowed rows up to the next quote in the file, with no telltale that
  settles which. :func:`inner_rows` gives the lines wholly inside such a record that read
  on their own as a row of the header's width: a reader that can check a row (fine-tuning:
  a valid example, label and all) says, in a ``note:``, where rows were likely swallowed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from roformer_lit.errors import ConfigError

#: What the ``csv`` reader reads as a blank row (and ``csv.DictReader`` skips).
_EMPTY_LINES = ("", "\n", "\r", "\r\n")


class RecordLines:
    """The lines of a CSV/TSV text as a ``csv`` reader takes them, numbered from ``first``
    (the text's line in its file), with those each record was read from (:meth:`take`)
    and whether the reader asked for a line past the last (:attr:`ended`)."""

    def __init__(self, lines: Iterable[str], first: int = 1) -> None:
        self._lines = iter(lines)
        self._taken: list[tuple[int, str]] = []
        self.number = first - 1
        self.ended = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            line = next(self._lines)
        except StopIteration:
            self.ended = True
            raise
        self.number += 1
        self._taken.append((self.number, line))
        return line

    def take(self) -> list[tuple[int, str]]:
        """(line number, line) of the lines read since the last call, blank lines before
        the record (which ``csv.DictReader`` skips) left out."""
        taken, self._taken = self._taken, []
        while taken and taken[0][1] in _EMPTY_LINES:
            taken.pop(0)
        return taken


def row_values(row: Mapping[Any, Any] | Sequence[Any]) -> list[Any]:
    """A record's values in file order: a list as it is, a ``csv.DictReader`` row's values
    (``None`` for those the row lacks left out; extras, under the key ``None``, last)."""
    if not isinstance(row, Mapping):
        return list(row)
    values = [v for k, v in row.items() if k is not None and v is not None]
    return values + list(row.get(None) or [])


def check_closed(lines: RecordLines, row: Mapping[Any, Any] | Sequence[Any], where: str) -> None:
    """Refuse the record just read (``row``) when the reader went past the last line for
    it: its last value opened a quote that nothing closed. ``where`` names the file; the
    line is that of the opening quote."""
    values = row_values(row)
    if not lines.ended or not values:  # an empty file ends before any record: none is open
        return
    last = values[-1] if values and isinstance(values[-1], str) else ""
    opened = lines.number - max(len(last.splitlines()), 1) + 1
    swallowed = lines.number - opened
    taken = f", taking the {swallowed} line(s) after it as its text" if swallowed else ""
    raise ConfigError(
        f'{where}:{opened}: a quote (") at the start of a value is never closed: the value '
        f"runs to the end of the file (line {lines.number}){taken}; close the quote, or "
        'quote the whole value (doubling each quote inside it: "")'
    )


def inner_rows(
    taken: Sequence[tuple[int, str]], delimiter: str, width: int
) -> list[tuple[int, list[str]]]:
    """(line number, values) of each line wholly inside a record read over several lines
    (``taken``, from :meth:`RecordLines.take`: neither its first line nor its last) that
    reads on its own as a row of ``width`` values: rows a missing closing quote may have
    swallowed into a text."""
    found = []
    for number, line in taken[1:-1]:
        parsed = list(csv.reader([line], delimiter=delimiter))
        if len(parsed) == 1 and len(parsed[0]) == width:
            found.append((number, parsed[0]))
    return found


class ClosedQuotesReader(csv.DictReader):
    """A ``csv.DictReader`` over ``lines`` that refuses a quote nothing closes
    (:func:`check_closed`, the header included); ``where`` names the file in the refusal,
    ``first`` the file's line ``lines`` start on. Its :attr:`lines` give each record's
    lines (:meth:`RecordLines.take`)."""

    def __init__(self, lines: Iterable[str], where: str, first: int = 1, **options: Any) -> None:
        self.lines = RecordLines(lines, first)
        self.where = where
        self._header_checked = False
        super().__init__(self.lines, **options)

    def __next__(self) -> dict[Any, Any]:
        if not self._header_checked:
            check_closed(self.lines, self.fieldnames or [], self.where)
            self._header_checked = True
        row = super().__next__()
        check_closed(self.lines, row, self.where)
        return row
