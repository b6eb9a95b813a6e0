"""Writing the files of ``compare --out DIR``, in one place for every kind of comparison.

Which files a comparison writes depends on its runs (pretraining, fine-tunes or both; a
``--select``), so each caller hands :func:`write_out_files` a mapping from file name to
the function that writes it. Before any is written, one ``note:`` line names those that
exist already and are about to be replaced
(:func:`~roformer_lit.run_files.note_replaced`), and one more those an earlier comparison
left in the directory that this one does not write (a ``--select`` after a plain
comparison leaves its plots; one of pretraining runs, the fine-tunes' tables): they stay
as they were, describing other runs. After, one ``wrote`` line per file. A write the
system refuses is one ``ConfigError`` line naming the file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.table import write_text
from roformer_lit.run_files import note_replaced

#: Writes one output file at the path it is given.
Writer = Callable[[Path], object]


def text_file(text: str) -> Writer:
    """A writer of ``text`` (with a final newline) as UTF-8."""
    return lambda path: write_text(path, text)


def write_out_files(
    out: Path, files: Mapping[str, Writer], every: Sequence[str] = ()
) -> list[Path]:
    """Write each of ``files`` (name -> writer) into ``out``, saying first which existing
    files are replaced and which of ``every`` (the names any comparison writes) are left
    from an earlier one; returns the paths written."""
    targets = [out / name for name in files]
    note_replaced("--out", targets)
    left = [out / name for name in every if name not in files and (out / name).is_file()]
    if left:
        print(
            f"note: --out {out} also holds {', '.join(p.name for p in left)} from an earlier "
            "comparison, which this one does not write: left as they were",
            file=sys.stderr,
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        for target, write in zip(targets, files.values(), strict=True):
            write(target)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from exc
    for target in targets:
        print(f"wrote {target}", file=sys.stderr)
    return targets
