"""Trivial baselines of the position tasks, scored on the very sequences a run is evaluated on.

A rule predicts every answer slot of a sequence without learning anything; its score is the
answer-token accuracy and exact match a model would get by following it, on the same
``(input_ids, labels)`` as the model (:class:`~roformer_lit.data.probes.dataset.ProbeValidation`
at each input length). The rules (:data:`RULES`; which task admits which is
:attr:`~roformer_lit.data.probes.tasks.ProbeTask.baselines`, and why is in
``docs/guide/position-tasks.md``):

* ``majority``: every slot gets the sequence's most frequent input symbol among those that
  can be an answer (the task's :attr:`~roformer_lit.data.probes.tasks.ProbeTask.alphabet`;
  ties: the smallest symbol). It needs no position at all: all ``[MASK]`` slots look alike
  to a model without position information, so the best ``nope`` can do on ``copy``,
  ``reverse``, ``sort`` and ``odds_first`` is this rule.
* ``uniform``: a uniform guess over the answer alphabet of ``k`` symbols, scored as its
  expectation: accuracy ``1/k``, exact match the mean over sequences of ``k^-slots``.
* ``relative_place`` (``sort``): input-independent; slot ``j`` of ``m`` gets the symbol at
  quantile ``(j + 1/2) / m`` of the symbol range, ``floor((j + 1/2) · symbols / m)``: a sorted
  uniform sample has, at relative place ``p``, a symbol near ``p · symbols``.

A deterministic rule's exact match is the share of sequences it gets entirely right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from roformer_lit.batch import IGNORE_INDEX
from roformer_lit.data.probes.ids import FIRST_SYMBOL, SEP_ID

if TYPE_CHECKING:
    from roformer_lit.data.probes.tasks import ProbeTask

#: ``rule(prefix, answers, low, high, symbols) -> probabilities`` ``[B, m]`` that each answer
#: slot is right; ``prefix`` ``[B, a]`` and ``answers`` ``[B, m]`` in symbol indices, the
#: answer alphabet ``low .. high - 1``.
Rule = Callable[[np.ndarray, np.ndarray, int, int, int], np.ndarray]


def _majority(prefix: np.ndarray, answers: np.ndarray, low: int, high: int, _s: int) -> np.ndarray:
    counts = np.stack([(prefix == s).sum(axis=1) for s in range(low, high)], axis=1)
    chosen = low + np.argmax(counts, axis=1)  # argmax: the first (smallest) of tied symbols
    return (answers == chosen[:, None]).astype(np.float64)


def _uniform(prefix: np.ndarray, answers: np.ndarray, low: int, high: int, _s: int) -> np.ndarray:
    return np.full(answers.shape, 1.0 / (high - low))


def _relative_place(
    prefix: np.ndarray, answers: np.ndarray, low: int, high: int, symbols: int
) -> np.ndarray:
    m = answers.shape[1]
    guess = np.floor((np.arange(m) + 0.5) * symbols / m).astype(np.int64)
    return (answers == guess[None, :]).astype(np.float64)


#: The baseline rules by name (see the module docstring).
RULES: dict[str, Rule] = {
    "majority": _majority,
    "uniform": _uniform,
    "relative_place": _relative_place,
}


@dataclass(frozen=True)
class BaselineScore:
    """One rule's answer-token accuracy and exact match on a set of sequences."""

    rule: str
    acc: float
    exact: float


def baseline_scores(
    task: ProbeTask, input_ids: np.ndarray, labels: np.ndarray, symbols: int
) -> list[BaselineScore]:
    """Every baseline ``task`` admits, scored on ``(input_ids, labels)`` (``[B, L]``, as
    :func:`~roformer_lit.data.probes.tasks.generate` builds them, one input length)."""
    input_ids, labels = np.asarray(input_ids), np.asarray(labels)
    sep = int(np.argmax(input_ids[0] == SEP_ID))
    prefix = input_ids[:, :sep] - FIRST_SYMBOL
    slots = labels != IGNORE_INDEX
    per_row = int(slots[0].sum())
    answers = labels[slots].reshape(labels.shape[0], per_row) - FIRST_SYMBOL
    low, high = task.alphabet(symbols)
    scores = []
    for name in task.baselines:
        right = RULES[name](prefix, answers, low, high, symbols)
        scores.append(
            BaselineScore(name, float(right.mean()), float(np.prod(right, axis=1).mean()))
        )
    return scores
