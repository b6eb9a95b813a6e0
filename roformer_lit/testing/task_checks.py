"""The task kit's checks: what every position task (a
:class:`~roformer_lit.data.probes.tasks.ProbeTask`, built-in or a user's) must do, each a
named :class:`~roformer_lit.testing.kit.Check` run as ``run(task, options)``.

Every batch goes through the harness's own functions: :func:`~roformer_lit.data.probes.tasks.generate`
(which checks what ``build`` returned with
:func:`~roformer_lit.data.probes.built.built_batch`) and the pre-launch check
:func:`~roformer_lit.data.probes.built.check_deterministic`, so a task that passes the kit
passes what ``fit`` checks. The checks (:data:`TASK_CHECKS`):

* ``fields``: the fields the commands use (a callable ``build``, an int ``width >= 1``,
  known baseline rules), as the registry checks a plugin task.
* ``alphabet``: ``alphabet(symbols)`` is a pair of ints ``0 <= low < high <= symbols`` (an
  empty alphabet has no answer and its ``uniform`` baseline divides by zero).
* ``lengths``: ``longest(symbols)`` is None or an int no shorter than ``min_length``, and
  every input length from ``min_length`` to ``max_length`` builds a valid batch
  (unhinted, and hinted for a task that takes a hint).
* ``extrapolation``: the lengths past ``max_length`` that ``extrapolate`` evaluates (up to
  ``extrapolate_to``, default twice ``max_length``, as far as the task's ``longest``
  allows) build valid batches too.
* ``deterministic``: two builds from generators of one seed agree at ``min_length`` and
  ``max_length`` (unhinted and hinted), as ``fit`` checks before any run.
* ``seeds``: two seeds give different batches (a task that ignores its ``rng`` is
  constant: its validation set is one sequence, and its training data never changes).
* ``baselines``: no baseline is declared twice, and every baseline the task declares scores an accuracy and an exact match in
  ``[0, 1]`` on the validation sequences at ``max_length``, as ``extrapolate`` scores them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from roformer_lit.data.probes.baselines import baseline_scores
from roformer_lit.data.probes.built import check_deterministic
from roformer_lit.data.probes.tasks import ProbeTask, generate, probe_rng
from roformer_lit.data.probes.tasks import check_task as check_fields
from roformer_lit.testing.kit import Check

Options = Mapping[str, Any]

#: The options of the task kit and their defaults (a run's ``data.probe_*`` settings).
DEFAULTS: dict[str, Any] = {
    "symbols": 16,
    "min_length": 1,
    "max_length": 6,
    "extrapolate_to": None,  # None: twice max_length
    "hint": 0.5,  # the hint of a task that takes one (a training batch)
    "seed": 0,
}

#: Rows of each batch the kit builds.
ROWS = 4


def _hints(task: ProbeTask, options: Options) -> list[float]:
    """0 (validation), and the ``hint`` option for a task that takes a hint."""
    return [0.0] if task.hint is None or not options["hint"] else [0.0, options["hint"]]


def _build(task: ProbeTask, options: Options, n: int, hint: float, seed: int) -> np.ndarray:
    """A batch at input length ``n`` through :func:`generate` (the harness's own checks):
    its ``input_ids`` and ``labels`` side by side."""
    input_ids, labels = generate(task, probe_rng(seed, "val", n), ROWS, n, options["symbols"], hint)
    return np.concatenate([input_ids, labels], axis=1)


def _fits(task: ProbeTask, options: Options, n: int) -> bool:
    """Whether ``n`` is within the task's ``longest`` for the kit's symbols."""
    longest = task.longest(options["symbols"])
    return longest is None or n <= longest


def _check_fields(task: ProbeTask, options: Options) -> None:
    check_fields(task, f"data.probe {task.name!r}")


def _check_alphabet(task: ProbeTask, options: Options) -> None:
    symbols = options["symbols"]
    alphabet = task.alphabet(symbols)
    if not (
        isinstance(alphabet, tuple)
        and len(alphabet) == 2
        and all(isinstance(end, int) and not isinstance(end, bool) for end in alphabet)
    ):
        raise AssertionError(f"alphabet({symbols}) must be a pair of ints, got {alphabet!r}")
    low, high = alphabet
    assert 0 <= low < high <= symbols, (
        f"alphabet({symbols}) = {alphabet}: must be 0 <= low < high <= {symbols}"
    )


def _check_lengths(task: ProbeTask, options: Options) -> None:
    symbols, low, high = options["symbols"], options["min_length"], options["max_length"]
    longest = task.longest(symbols)
    assert longest is None or (isinstance(longest, int) and longest >= low), (
        f"longest({symbols}) = {longest!r}: must be None or an int >= min_length {low}"
    )
    for n in range(low, high + 1):
        if _fits(task, options, n):
            for hint in _hints(task, options):
                _build(task, options, n, hint, options["seed"])


def _extrapolation_lengths(task: ProbeTask, options: Options) -> list[int]:
    """The lengths past ``max_length`` the kit builds, within the task's ``longest``."""
    high = options["max_length"]
    last = options["extrapolate_to"] or 2 * high
    return [n for n in range(high + 1, last + 1) if _fits(task, options, n)]


def _check_extrapolation(task: ProbeTask, options: Options) -> None:
    for n in _extrapolation_lengths(task, options):
        _build(task, options, n, 0.0, options["seed"])


def _check_deterministic(task: ProbeTask, options: Options) -> None:
    for n in sorted({options["min_length"], options["max_length"]}):
        if _fits(task, options, n):
            for hint in _hints(task, options):
                check_deterministic(task, options["symbols"], n, hint, options["seed"])


def _check_seeds(task: ProbeTask, options: Options) -> None:
    n, seed = options["max_length"], options["seed"]
    longest = task.longest(options["symbols"])
    n = n if longest is None else min(n, longest)
    first, second = (_build(task, options, n, 0.0, s) for s in (seed, seed + 1))
    assert not np.array_equal(first, second), (
        f"seeds {seed} and {seed + 1} build the same batch at input length {n}: "
        "build ignores the rng it is given (its data is constant)"
    )


def _check_baselines(task: ProbeTask, options: Options) -> None:
    n, symbols = options["max_length"], options["symbols"]
    longest = task.longest(symbols)
    n = n if longest is None else min(n, longest)
    for rule in set(task.baselines):
        assert list(task.baselines).count(rule) == 1, (
            f"declares baseline {rule!r} twice: extrapolate would print two rows of it"
        )
    batch = _build(task, options, n, 0.0, options["seed"])
    width = batch.shape[1] // 2
    scores = baseline_scores(task, batch[:, :width], batch[:, width:], symbols)
    assert [score.rule for score in scores] == list(task.baselines), (
        f"scored {[score.rule for score in scores]}, declared {list(task.baselines)}"
    )
    for score in scores:
        for metric in ("acc", "exact"):
            value = getattr(score, metric)
            assert math.isfinite(value) and 0.0 <= value <= 1.0, (
                f"baseline {score.rule!r} scores {metric} {value} at input length {n}"
            )


def _has_extrapolation(task: ProbeTask, options: Options) -> bool:
    return bool(_extrapolation_lengths(task, options))


#: The task kit's checks by name, in the order they run.
TASK_CHECKS: dict[str, Check] = {
    check.name: check
    for check in [
        Check("fields", _check_fields),
        Check("alphabet", _check_alphabet),
        Check("lengths", _check_lengths),
        Check("extrapolation", _check_extrapolation, _has_extrapolation),
        Check("deterministic", _check_deterministic),
        Check("seeds", _check_seeds),
        Check("baselines", _check_baselines, lambda task, options: bool(task.baselines)),
    ]
}
