"""A quote (``"``) at the start of a CSV value that nothing closes took every line after it
into that value, and the rows there were lost without a word (exit 0 where the value was
the row's last). Every CSV the package reads goes through
:class:`roformer_lit.csv_records.ClosedQuotesReader`: a quote still open at the end of the
file is refused in one line naming the line where it opened. A quote closed lines later
may be a quoted text over several lines (legal) or a missing quote that swallowed rows up
to the next quote: a task file says so in a ``note:`` where a line inside the text reads as
an example of its own, and reads on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from roformer_lit.csv_records import ClosedQuotesReader
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.examples import read_local
from roformer_lit.results.compare.select import read_report
from roformer_lit.results.study import quickstart
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.reading import csv_rows


def _task(path: Path) -> object:
    return read_local([path], "text", None, "label")


def _report(path: Path) -> object:
    return read_report(path, report=lambda line: None)


def _study(path: Path) -> object:
    return list(csv_rows(path, {"path": str, "val_acc": float}))


def _quickstart(path: Path) -> object:
    """The quick start's curve file (its CSV starts on line 2, after a comment line)."""
    before = (PLACES.bench, PLACES.pages)
    read_from(path.parent, path.parent)
    try:
        return quickstart.curves()
    finally:
        read_from(*before)


#: case -> (reader, file name, content, line the quote opened on)
UNCLOSED: dict[str, tuple[Callable[[Path], object], str, str, int]] = {
    "task_text_last": (_task, "a.csv", 'label,text\n0,ok\n1,"hello\n0,fine\n1,more\n', 3),
    "task_text_first": (_task, "a.csv", 'text,label\nok,0\n"hello, world,1\nfine,0\n', 3),
    "task_no_final_newline": (_task, "a.csv", 'label,text\n0,ok\n1,"hello\n0,fine', 3),
    "task_last_line": (_task, "a.csv", 'label,text\n0,ok\n1,"hello\n', 3),
    "task_quote_alone_at_the_end": (_task, "a.csv", 'label,text\n0,ok\n1,"', 3),
    "task_header": (_task, "a.csv", 'label,"text\n0,ok\n1,fine\n', 1),
    "task_blank_lines_before": (_task, "a.csv", 'label,text\n\n0,ok\n\n1,"x\n0,y\n', 5),
    "task_tsv_one_column_swallowed": (_task, "a.tsv", 'label\ttext\n0\tok\n1\t"x\n0\n', 3),
    "report_name_last": (
        _report,
        "r.csv",
        'length,metric,value,name\n8,val_loss,1.0,a\n8,val_loss,2.0,"b\n16,val_loss,3.0,b\n',
        3,
    ),
    "study_path_last": (
        _study,
        "s.csv",
        'val_acc,path\n0.5,runs/a\n0.6,"runs/b\n0.7,runs/c\n',
        3,
    ),
    "study_quickstart_curves": (
        _quickstart,
        quickstart.CURVES_RAW,
        '# cpu; torch 9; cmd\nseed,step,val_loss,val_acc\n0,49,6.8,0.03\n0,299,5.1,"0.2\n',
        4,
    ),
}


@pytest.mark.parametrize("case", list(UNCLOSED))
def test_a_quote_open_at_the_end_of_the_file_is_refused_where_it_opened(case, tmp_path):
    reader, name, content, opened = UNCLOSED[case]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        reader(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert f"{path}:{opened}: a quote" in message and "never closed" in message, message


#: case -> (task file content, the note's words or None)
CLOSED_LATER: dict[str, tuple[str, str | None]] = {
    "a_row_swallowed_up_to_the_next_quote": (
        'text,label\nok,0\n"Great phone,1\nBad battery,0\nI said "wow",1\nend,0\n',
        ":3: the quoted value of 'text' that opens here runs to line 5, and line 4",
    ),
    "rows_swallowed_in_two_places": (
        'text,label\n"a,1\nb,0\n"c",1\n"d,1\ne,0\nf "g",1\n',
        ":2: the quoted value of 'text' that opens here runs to line 4, and line 3",
    ),
    "a_quoted_text_over_lines": ('text,label\n"two\nlines, here\nthree",1\nok,0\n', None),
    "a_quoted_text_of_two_lines": ('text,label\n"one,\n1",1\nok,0\n', None),
    "a_quoted_text_whose_line_has_a_number": ('text,label\n"a\nb,2 c\nd",1\nok,0\n', None),
    "a_quote_inside_a_value": ('text,label\n5" screen,1\n"a" b,0\n', None),
}


@pytest.mark.parametrize("case", list(CLOSED_LATER))
def test_rows_likely_swallowed_into_a_quoted_text_get_a_note(case, tmp_path, capsys):
    content, words = CLOSED_LATER[case]
    path = tmp_path / "a.csv"
    path.write_text(content, encoding="utf-8")
    capsys.readouterr()
    read_local([path], "text", None, "label")  # read on: the text may be meant
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    if words is None:
        assert notes == []
    else:
        assert len(notes) == 1 and f"{path}{words}" in notes[0], notes
    if case == "rows_swallowed_in_two_places":
        assert "(1 more such row(s) in the file)" in notes[0], notes


@pytest.mark.parametrize("content", ["", "\n", "\n\n", "text,label\n", "text,label"], ids=repr)
def test_a_file_without_a_record_opens_no_quote(content):
    """An empty file ends before its header: the reader went past the end for no record,
    which is no quote left open (the readers then say the file holds no examples)."""
    reader = ClosedQuotesReader(content.splitlines(keepends=True), "a.csv")
    assert list(reader) == []
