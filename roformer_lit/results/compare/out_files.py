"""Writing the files of ``compare --out DIR``, in one place for every kind of comparison.

Which files a comparison writes depends on its runs (pretraining, fine-tunes or both; a
``--select``), so each caller hands :func:`write_out_files` a mapping from file name to
the function that writes it. Before any is written, one ``note:`` line names those that
exist already and are about to be replaced
(:func:`~roformer_lit.run_files.note_replaced`); after, one ``wrote`` line per file. A
write the system refuses is one ``ConfigError`` line naming the file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.table import write_text
from roformer_lit.run_files import note_replaced

#: Writes one output file at the path it is given.
Writer = Callable[[Path], object]


def text_file(text: str) -> Writer:
    """A writer of ``text`` (with a final newline) as UTF-8."""
    return lambda path: write_text(path, text)


def write_out_files(out: Path, files: Mapping[str, Writer]) -> list[Path]:
    """Write each of ``files`` (name -> writer) into ``out``, saying first which existing
    files are replaced; returns the paths written."""
    targets = [out / name for name in files]
    note_replaced("--out", targets)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for target, write in zip(targets, files.values(), strict=True):
            write(target)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from exc
    for target in targets:
        print(f"wrote {target}", file=sys.stderr)
    return targets
