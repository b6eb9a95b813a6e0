"""The columns of ``extrapolate``'s ``--csv`` and ``--budget`` files.

A module of its own, importing nothing: the readers of those files (``compare --report``,
the studies) name the columns without importing the writer, which labels its baseline rows
through :mod:`roformer_lit.results.compare.variants`.
"""

from __future__ import annotations

#: The column naming the split (``--split``: ``val`` or ``test``) a row was evaluated on.
SPLIT_COLUMN = "split"
COLUMNS = ("name", "length", "metric", "value", SPLIT_COLUMN)
BUDGET_COLUMNS = ("name", "step", "length", "metric", "value", SPLIT_COLUMN)
