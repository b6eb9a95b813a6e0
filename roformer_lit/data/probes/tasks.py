"""Synthetic position probes as masked-token fill-in: the registry :data:`PROBE_TASKS`.

Every task builds, for an input length ``n``, sequences over ``symbols`` symbols laid out as

    input tokens, [SEP], answer slots

where every answer slot holds ``[MASK]`` in ``input_ids`` and the answer symbol's id in
``labels``; every other position is labelled ``-100``. The MLM loss, ``val/acc`` (then
answer-token accuracy) and ``val/exact`` of :class:`~roformer_lit.module.MaskedLM` work on
them unchanged. Ids: ``[PAD]`` 0, ``[MASK]`` 1, ``[SEP]`` 2, symbol ``s`` is ``3 + s``
(:data:`~roformer_lit.data.probes.ids.FIRST_SYMBOL`); nothing is padded (one ``n`` per batch).

Generation is a pure function of a ``numpy.random.Generator`` (:func:`probe_rng` derives
it from integers, so the same seed gives the same data in every process and on resume);
nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from roformer_lit.batch import IGNORE_INDEX
from roformer_lit.data.probes.baselines import RULES
from roformer_lit.data.probes.built import built_batch
from roformer_lit.data.probes.ids import FIRST_SYMBOL, MASK_ID, SEP_ID
from roformer_lit.data.probes.ids import PAD_ID as PAD_ID  # re-exported: the ids of a probe
from roformer_lit.errors import ConfigError
from roformer_lit.registry import Registry, instance_of

#: Codes of the generator streams (part of every generator's seed).
STREAMS = {
    "train": 0,
    "val": 1,
    "positions": 2,
    "val_positions": 3,
    "test": 4,  # extrapolate --split test: held-out sequences no validation ever saw
    "test_positions": 5,
}

#: ``build(rng, batch, n, symbols, hint) -> (prefix [B, a], suffix [B, b], answer [b])`` in
#: symbol indices ``0 .. symbols - 1``; ``answer[j]`` marks the suffix slots that are masked;
#: ``hint`` is the task's training hint (0: none; see :attr:`ProbeTask.hint`).
Builder = Callable[
    [np.random.Generator, int, int, int, float], tuple[np.ndarray, np.ndarray, np.ndarray]
]


@dataclass(frozen=True)
class ProbeTask:
    """One probe: how it builds a batch, its sequence length and its longest input."""

    name: str
    build: Builder
    #: Tokens per input symbol in the prefix (and in the suffix): 1, or 2 for ``recall``.
    width: int = 1
    #: The longest input length ``n`` that ``symbols`` symbols allow (None: unbounded).
    longest: Callable[[int], int | None] = lambda symbols: None
    #: What ``data.probe_hint`` does to this task's training batches (None: it takes none).
    hint: str | None = None
    #: The trivial baselines it admits (names of
    #: :data:`~roformer_lit.data.probes.baselines.RULES`), scored beside every evaluation.
    baselines: tuple[str, ...] = ("majority", "uniform")
    #: The symbols an answer slot can hold, ``(low, high)`` (``low .. high - 1``) for
    #: ``symbols`` symbols.
    alphabet: Callable[[int], tuple[int, int]] = lambda symbols: (0, symbols)

    def sequence_length(self, n: int) -> int:
        """Tokens in a sequence of input length ``n`` (prefix, ``[SEP]``, answer slots)."""
        return 2 * self.width * n + 1

    def check(self, n: int, symbols: int, name: str = "data.probe_max_length") -> None:
        """A one-line ConfigError if ``n`` is not a valid input length with ``symbols``."""
        longest = self.longest(symbols)
        if n < 1 or (longest is not None and n > longest):
            upper = "" if longest is None else f" and <= {longest} with {symbols} symbols"
            raise ConfigError(f"{name}={n} is invalid for probe {self.name!r}: must be >= 1{upper}")


def _answers(build: Callable[[np.ndarray], np.ndarray]) -> Builder:
    """A task whose slots are a function of uniformly drawn input symbols (all masked)."""

    def builder(
        rng: np.random.Generator, batch: int, n: int, symbols: int, hint: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inputs = rng.integers(0, symbols, size=(batch, n), dtype=np.int64)
        answers = np.ascontiguousarray(build(inputs))
        return inputs, answers, np.ones(answers.shape[1], dtype=bool)

    return builder


def _copy(inputs: np.ndarray) -> np.ndarray:
    """``copy``: slot ``j`` holds input ``j`` (a fixed relative offset ``n + 1``).

    Source: Duplicate String of Delétang et al. 2023, "Neural Networks and the Chomsky
    Hierarchy" (google-deepmind/randomized_positional_encodings tasks/cs/duplicate_string.py),
    as fill-in of the second copy."""
    return inputs


def _reverse(inputs: np.ndarray) -> np.ndarray:
    """``reverse``: slot ``j`` holds input ``n - 1 - j``.

    Source: Reverse String of Delétang et al. 2023 (google-deepmind/
    randomized_positional_encodings tasks/dcf/reverse_string.py)."""
    return inputs[:, ::-1]


def _sort(inputs: np.ndarray) -> np.ndarray:
    """``sort``: the slots hold the input sorted ascending (by symbol index).

    Source: Sort (bucket sort) of Delétang et al. 2023 (google-deepmind/
    randomized_positional_encodings tasks/cs/bucket_sort.py)."""
    return np.sort(inputs, axis=1)


def _odds_first(inputs: np.ndarray) -> np.ndarray:
    """``odds_first``: the slots hold ``s_1 s_3 s_5 ... s_2 s_4 ...`` (1-indexed as in the
    paper): the inputs at odd positions, then those at even ones; needs the parity of
    absolute position.

    Source: Odds First, Delétang et al. 2023 (google-deepmind/randomized_positional_encodings
    tasks/cs/odds_first.py)."""
    return np.concatenate([inputs[:, 0::2], inputs[:, 1::2]], axis=1)


def _recall(
    rng: np.random.Generator, batch: int, n: int, symbols: int, hint: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``recall`` (associative recall): ``n`` key-value pairs ``k1 v1 ... kn vn``, then every
    key once in a random order, each followed by a masked slot holding its value. Keys are
    distinct and drawn from the first half of the symbols (``0 .. symbols//2 - 1``), values
    from the second half, so a key is found by content alone and its value is its right
    neighbour: a control that relative schemes should find easy. ``n <= symbols // 2``.

    With ``hint`` ``h > 0`` (training batches only), each pair's value is, with probability
    ``h``, its key's fixed partner ``key + symbols // 2`` instead of a uniform draw. Without
    it the lookup has no gradient path: reading the key beside a slot helps only once the
    key can be found in the pairs, and finding it helps only once the key is read, so the
    models stay at guessing among the values present. The partner makes reading the key
    useful on its own, the lookup forms on top of it, and validation (never hinted) then
    measures the lookup alone.

    Source: associative recall of Ba et al. 2016 ("Using Fast Weights to Attend to the
    Recent Past") as used by Fu et al. 2023 ("Hungry Hungry Hippos", MQAR of Arora et al.
    2023 "Zoology"), as masked fill-in."""
    half = symbols // 2
    keys = np.argsort(rng.random((batch, half)), axis=1)[:, :n].astype(np.int64)
    values = rng.integers(half, symbols, size=(batch, n), dtype=np.int64)
    if hint > 0:  # drawn only when hinted: unhinted batches are the same as ever
        values = np.where(rng.random((batch, n)) < hint, keys + half, values)
    order = np.argsort(rng.random((batch, n)), axis=1)
    prefix = np.stack([keys, values], axis=2).reshape(batch, 2 * n)
    queried = np.stack(
        [np.take_along_axis(keys, order, 1), np.take_along_axis(values, order, 1)], axis=2
    ).reshape(batch, 2 * n)
    return prefix, queried, np.tile([False, True], n)


def check_task(task: ProbeTask, label: str) -> None:
    """A one-line ConfigError beginning with ``label`` for a task whose fields the
    commands cannot use: ``width`` a positive int, ``baselines`` names of
    :data:`~roformer_lit.data.probes.baselines.RULES`, a callable ``build``."""
    if not callable(task.build):
        raise ConfigError(f"{label}: build={task.build!r} is not callable")
    if isinstance(task.width, bool) or not isinstance(task.width, int) or task.width < 1:
        raise ConfigError(f"{label}: width={task.width!r} must be an int >= 1")
    unknown = [rule for rule in task.baselines if rule not in RULES]
    if isinstance(task.baselines, str) or unknown:
        raise ConfigError(
            f"{label}: baselines={task.baselines!r} must be a tuple of baseline rules "
            f"among {', '.join(RULES)}"
        )


#: The probe tasks by name; a user's task (a :class:`ProbeTask`) is found by import path
#: (``my_pkg.tasks:MY_TASK``) or an entry point in the group ``roformer_lit.tasks``.
PROBE_TASKS: Registry[ProbeTask] = Registry(
    "data.probe",
    "roformer_lit.data.probes.tasks.ProbeTask",
    instance_of(ProbeTask),
    {
        "copy": ProbeTask("copy", _answers(_copy)),
        "reverse": ProbeTask("reverse", _answers(_reverse)),
        "sort": ProbeTask(
            "sort", _answers(_sort), baselines=("majority", "uniform", "relative_place")
        ),
        "recall": ProbeTask(
            "recall",
            _recall,
            width=2,
            longest=lambda symbols: symbols // 2,
            hint="the share of training pairs whose value is its key's fixed partner",
            alphabet=lambda symbols: (symbols // 2, symbols),
        ),
        "odds_first": ProbeTask("odds_first", _answers(_odds_first)),
    },
    group="roformer_lit.tasks",
    check=check_task,
)


def probe_task(name: object) -> ProbeTask:
    """The task called ``name``, or a one-line ConfigError naming the valid ones."""
    try:
        return PROBE_TASKS[name]
    except KeyError:
        raise ConfigError(
            f"data.probe={name!r} is not a probe task: valid: {', '.join(PROBE_TASKS)}, an "
            "import path package.module:TASK, or null"
        ) from None


def probe_rng(seed: int, stream: str, *keys: int) -> np.random.Generator:
    """The generator of (``seed``, ``stream``, ``keys``): a pure function of its integer
    arguments (numpy's ``SeedSequence``), the same in every process and platform."""
    return np.random.default_rng(np.random.SeedSequence([seed, STREAMS[stream], *keys]))


def generate(
    task: ProbeTask,
    rng: np.random.Generator,
    batch: int,
    n: int,
    symbols: int,
    hint: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(input_ids, labels)``, each ``[batch, task.sequence_length(n)]`` int64: the input
    symbols, ``[SEP]``, the suffix with answer slots ``[MASK]``; labels are the answer ids
    at the answer slots and ``-100`` everywhere else. A ConfigError if the task cannot
    build input length ``n`` with ``symbols`` symbols. ``hint``: the task's training hint
    (:attr:`ProbeTask.hint`; 0 for validation). What ``build`` returns is checked first
    (:func:`~roformer_lit.data.probes.built.built_batch`): a user's task that returns
    anything else is one line naming it."""
    task.check(n, symbols, name="input length n")
    prefix, suffix, answer = built_batch(task, rng, batch, n, symbols, hint)
    prefix, suffix = prefix + FIRST_SYMBOL, suffix + FIRST_SYMBOL
    sep = np.full((batch, 1), SEP_ID, dtype=np.int64)
    ignored = np.full((batch, prefix.shape[1] + 1), IGNORE_INDEX, dtype=np.int64)
    input_ids = np.concatenate([prefix, sep, np.where(answer, MASK_ID, suffix)], axis=1)
    labels = np.concatenate([ignored, np.where(answer, suffix, IGNORE_INDEX)], axis=1)
    return input_ids, labels
