"""What a position task's ``build`` returned, checked before it becomes a batch.

A user's task (:class:`~roformer_lit.data.probes.tasks.ProbeTask` by import path or entry
point) hands back ``(prefix, suffix, answer)``; nothing else stands between those arrays
and the model. A label out of the symbol range is an ``IndexError`` deep in the loss, a
negative one silently becomes ``[SEP]`` or ``[PAD]``, a sequence longer than the task says
overruns ``data.max_length``, a task with no answer slot never logs ``val/loss``, and a
``build`` that draws from anything but the generator it is given (numpy's global state,
the clock) makes validation and resume differ from run to run. Each is the task's bug: one
:class:`~roformer_lit.errors.PluginBuildFailed` line naming the task and what is wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from roformer_lit.errors import PluginBuildFailed
from roformer_lit.registry import call_plugin

if TYPE_CHECKING:
    from roformer_lit.data.probes.tasks import ProbeTask


def task_label(task: ProbeTask) -> str:
    """``data.probe 'name' (its build, module.function)``: how the lines name a task."""
    build = task.build
    where = f"{getattr(build, '__module__', '?')}.{getattr(build, '__qualname__', build)}"
    return f"data.probe {task.name!r} (build {where})"


def _symbols_array(value: Any, label: str, what: str, rows: int) -> np.ndarray:
    """``value`` as a ``[rows, m]`` int64 array, or the line saying why it is not one."""
    if not isinstance(value, np.ndarray) or value.ndim != 2:
        got = getattr(value, "shape", type(value).__name__)
        raise PluginBuildFailed(f"{label}: {what} must be a 2-d numpy array, got {got}")
    if not np.issubdtype(value.dtype, np.integer):
        raise PluginBuildFailed(
            f"{label}: {what} must hold integer symbol indices, got dtype {value.dtype}"
        )
    if value.shape[0] != rows:
        raise PluginBuildFailed(f"{label}: {what} has {value.shape[0]} rows for a batch of {rows}")
    return value.astype(np.int64, copy=False)


def _in_range(values: np.ndarray, low: int, high: int, label: str, what: str) -> None:
    """A line if any of ``values`` is outside ``low .. high - 1``."""
    if values.size and (values.min() < low or values.max() >= high):
        bad = values[(values < low) | (values >= high)][0]
        raise PluginBuildFailed(
            f"{label}: {what} holds symbol {int(bad)}, outside {low} .. {high - 1}"
        )


def built_batch(
    task: ProbeTask,
    rng: np.random.Generator,
    batch: int,
    n: int,
    symbols: int,
    hint: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``task.build(rng, batch, n, symbols, hint)``, checked: ``prefix`` and ``suffix``
    integer ``[batch, *]`` arrays of symbols ``0 .. symbols - 1`` that make, with the
    ``[SEP]``, ``task.sequence_length(n)`` tokens; ``answer`` a boolean ``[suffix width]``
    mask with at least one slot; every answered slot in the task's ``alphabet``. A
    ``build`` that raises, or returns anything else, is one line naming the task."""
    label = task_label(task)
    built = call_plugin(task.build, label, rng, batch, n, symbols, hint)
    if not (isinstance(built, tuple) and len(built) == 3):
        raise PluginBuildFailed(
            f"{label}: build must return (prefix, suffix, answer), got {type(built).__name__}"
        )
    prefix = _symbols_array(built[0], label, "prefix", batch)
    suffix = _symbols_array(built[1], label, "suffix", batch)
    answer = built[2]
    if not (isinstance(answer, np.ndarray) and answer.dtype == bool and answer.ndim == 1):
        got = getattr(answer, "dtype", type(answer).__name__)
        raise PluginBuildFailed(f"{label}: answer must be a 1-d boolean numpy array, got {got}")
    if answer.shape[0] != suffix.shape[1]:
        raise PluginBuildFailed(
            f"{label}: answer marks {answer.shape[0]} slots of a suffix of {suffix.shape[1]}"
        )
    if not answer.any():
        raise PluginBuildFailed(f"{label}: answer marks no slot (nothing to predict)")
    tokens, expected = prefix.shape[1] + 1 + suffix.shape[1], task.sequence_length(n)
    if tokens != expected:
        raise PluginBuildFailed(
            f"{label}: input length {n} built {tokens} tokens, but the task's "
            f"sequence_length({n}) is {expected} (width={task.width})"
        )
    _in_range(prefix, 0, symbols, label, "prefix")
    _in_range(suffix[:, ~answer], 0, symbols, label, "suffix")
    low, high = task.alphabet(symbols)
    _in_range(suffix[:, answer], low, high, label, "an answer slot (its alphabet)")
    return prefix, suffix, answer


def check_deterministic(task: ProbeTask, symbols: int, n: int, hint: float, seed: int) -> None:
    """A line if two builds from generators of one seed differ: a ``build`` that draws
    from anything but the generator it is given (validation and resume would differ)."""
    label = task_label(task)
    first, second = (
        built_batch(task, np.random.default_rng([seed, n]), 4, n, symbols, hint) for _ in range(2)
    )
    if not all(np.array_equal(a, b) for a, b in zip(first, second, strict=True)):
        raise PluginBuildFailed(
            f"{label}: two builds from generators of one seed differ; build must draw "
            "from the rng it is given only (not numpy's global state or the clock)"
        )
