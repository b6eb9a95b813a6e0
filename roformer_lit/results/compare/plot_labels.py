"""A variant's label in a figure: wrapped, and cut where it is still too long.

A variant differing in many settings has a label of hundreds of characters
(``rope-softmax learning_rate=0.003 some_setting=...``); drawn whole, as one line, it
leaves constrained layout no room for the axes (matplotlib then warns and draws the figure
unlaid). :func:`plot_labels` wraps each label at its spaces into lines of at most ``width``
characters (a longer word is broken) and keeps at most ``lines`` of them; a cut label ends
in ``…`` and its place among the figure's variants (``[#3]``), which is its row in the
table (``compare.md``; in ``downstream.md``, its row among that task's), so two labels cut
to the same text are still told apart and the whole one can be found. The tables always
hold the whole label.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

#: Characters per line of a label in a legend or under an axis.
WIDTH = 40
#: Lines per label at most.
LINES = 3


def plot_labels(labels: Sequence[str], width: int = WIDTH, lines: int = LINES) -> list[str]:
    """Each of ``labels`` as drawn (see the module docstring); the i-th cut one names row
    ``i + 1``."""
    out = []
    for index, label in enumerate(labels):
        wrapped = textwrap.wrap(label, width=width, break_on_hyphens=False) or [label]
        if len(wrapped) > lines:
            tag = f"… [#{index + 1}]"
            kept = textwrap.wrap(" ".join(wrapped[lines - 1 :]), width=width - len(tag))
            wrapped = [*wrapped[: lines - 1], kept[0] + tag]
        out.append("\n".join(wrapped))
    return out
