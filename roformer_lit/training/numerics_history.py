"""A run's numerics over its life: each stretch it trained under other numerics, and what a
damaged record in a checkpoint is read as.

A checkpoint holds ``numerics`` (:func:`roformer_lit.training.lifecycle.numerics_record`:
processor, torch, CPU threads of the process that wrote it) and ``numerics_history``: one
entry per stretch of training under one set of numerics, oldest first, each the record
plus ``from_step`` (the optimiser step the stretch began at; null where it is not known: a
checkpoint written before the history was kept). A run resumed under another thread count
adds an entry, so a run trained at 1 thread to step 1,000 and at 2 from there says both.

**A damaged record** (a ``numerics`` that is not a mapping -- a string, a list --, or a
history that is not a list of mappings) is *read as absent, with one* ``warning:`` *line*,
never refused: the record describes how the run's sums were rounded, it is no part of the
state that continues training (weights, optimiser, generators), so refusing to resume
would stop a run for a label. The run then records its numerics from here on, and the
history keeps every entry that could be read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The checkpoint key of the history.
HISTORY_KEY = "numerics_history"


def _kind(value: Any) -> str:
    return type(value).__name__


def read_record(value: Any, where: str) -> tuple[Mapping[str, Any] | None, str | None]:
    """(a checkpoint's ``numerics`` record, None if absent or damaged; the warning for a
    damaged one)."""
    if value is None or isinstance(value, Mapping):
        return value, None
    return None, (
        f"{where}: its numerics record is a {_kind(value)}, not a mapping of processor, "
        "torch and cpu_threads; read as unrecorded (the run resumes and records its numerics "
        "from here on)"
    )


def read_history(
    value: Any, record: Mapping[str, Any] | None, where: str
) -> tuple[list[dict[str, Any]], str | None]:
    """(the history a checkpoint holds, every readable entry; the warning for a damaged
    one). A checkpoint without a history but with a record starts it with that record
    (``from_step`` unknown)."""
    if value is None:
        return ([{"from_step": None, **record}] if record else []), None
    entries = value if isinstance(value, list) else []
    kept = [dict(entry) for entry in entries if isinstance(entry, Mapping)]
    if isinstance(value, list) and len(kept) == len(entries):
        return kept, None
    what = f"a {_kind(value)}" if not isinstance(value, list) else "a list holding non-mappings"
    return kept, (
        f"{where}: its {HISTORY_KEY} is {what}; kept the {len(kept)} entries that read as records"
    )


def _numerics(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "from_step"}


def extended(
    history: list[dict[str, Any]], now: Mapping[str, Any], step: int | None
) -> list[dict[str, Any]]:
    """``history`` with the numerics ``now`` of the stretch that began at ``step`` added,
    unless they are the last entry's."""
    if history and _numerics(history[-1]) == dict(now):
        return list(history)
    return [*history, {"from_step": step, **now}]


__all__ = ["HISTORY_KEY", "extended", "read_history", "read_record"]
