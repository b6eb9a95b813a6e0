"""The task kit fails a broken position task, naming the check, the task and what is wrong:
one broken task per check, each an author's likely mistake, and each passing the checks its
mistake is not about (the failure is the named check's, not a kit that fails everything)."""

from __future__ import annotations

import numpy as np
import pytest

from roformer_lit.data.probes.tasks import ProbeTask
from roformer_lit.testing import check_task


def _inputs(rng: np.random.Generator, batch: int, n: int, symbols: int) -> np.ndarray:
    return rng.integers(0, symbols, size=(batch, n), dtype=np.int64)


def copy(rng, batch, n, symbols, hint=0.0):
    """A correct task: the suffix copies the input."""
    x = _inputs(rng, batch, n, symbols)
    return x, x.copy(), np.ones(n, dtype=bool)


def evens_twice(rng, batch, n, symbols, hint=0.0):
    """odds_first written as the even positions twice: one slot short at every odd ``n``."""
    x = _inputs(rng, batch, n, symbols)
    return (
        x,
        np.concatenate([x[:, 0::2][:, : n // 2], x[:, 1::2]], axis=1),
        np.ones(2 * (n // 2), dtype=bool),
    )


#: A permutation table built for the training lengths only (up to 6).
TABLE = np.arange(6)


def tabled(rng, batch, n, symbols, hint=0.0):
    """Reads its answers through a table sized for the lengths it was trained at."""
    x = _inputs(rng, batch, n, symbols)
    return x, x[:, TABLE[:n]], np.ones(min(n, len(TABLE)), dtype=bool)


def global_state(rng, batch, n, symbols, hint=0.0):
    """Draws from numpy's global generator, not the one it is given."""
    x = np.random.randint(0, symbols, size=(batch, n)).astype(np.int64)
    return x, x.copy(), np.ones(n, dtype=bool)


def own_generator(rng, batch, n, symbols, hint=0.0):
    """Makes its own generator from a fixed seed: reproducible, and the same every seed."""
    return copy(np.random.default_rng(0), batch, n, symbols)


def hinted_past_the_symbols(rng, batch, n, symbols, hint=0.0):
    """A hint that shifts answers by ``symbols // 2``, forgetting to wrap them round."""
    x, y, answer = copy(rng, batch, n, symbols)
    if hint > 0:
        y = np.where(rng.random((batch, n)) < hint, y + symbols // 2, y)
    return x, y, answer


BROKEN = [
    (ProbeTask("no_width", copy, width=0), "fields", "width=0 must be an int >= 1"),
    (
        ProbeTask("empty_alphabet", copy, alphabet=lambda symbols: (symbols, symbols)),
        "alphabet",
        "alphabet(16) = (16, 16): must be 0 <= low < high <= 16",
    ),
    (ProbeTask("evens_twice", evens_twice), "lengths", "answer marks no slot"),
    (ProbeTask("too_long", copy, longest=lambda symbols: 0), "lengths", "longest(16) = 0"),
    (
        ProbeTask("hinted", hinted_past_the_symbols, hint="a shift"),
        "lengths",
        "holds symbol 1",
    ),
    (
        ProbeTask("tabled", tabled),
        "extrapolation",
        "input length 7 built 14 tokens, but the task's sequence_length(7) is 15",
    ),
    (
        ProbeTask("global_state", global_state),
        "deterministic",
        "two builds from generators of one seed differ",
    ),
    (
        ProbeTask("own_generator", own_generator),
        "seeds",
        "seeds 0 and 1 build the same batch at input length 6",
    ),
    (
        ProbeTask("twice", copy, baselines=("majority", "majority")),
        "baselines",
        "declares baseline 'majority' twice",
    ),
]


@pytest.mark.parametrize(
    "task,check,words", BROKEN, ids=[task.name for task, _check, _words in BROKEN]
)
def test_the_kit_fails_a_broken_task_naming_check_task_and_mistake(task, check, words):
    with pytest.raises(AssertionError) as failure:
        check_task(task)
    message = str(failure.value)
    assert message.startswith(f"{check} check failed for task {task.name!r} "), message
    assert words in message, message


@pytest.mark.parametrize(
    "task,check",
    [
        (BROKEN[0][0], "alphabet"),
        (BROKEN[1][0], "fields"),
        (BROKEN[2][0], "seeds"),  # at max_length 6, an even length
        (BROKEN[4][0], "seeds"),  # validation batches are unhinted
        (BROKEN[5][0], "lengths"),
        (BROKEN[5][0], "deterministic"),
        (BROKEN[6][0], "lengths"),
        (BROKEN[6][0], "seeds"),
        (BROKEN[7][0], "deterministic"),
        (BROKEN[7][0], "extrapolation"),
        (BROKEN[8][0], "lengths"),
    ],
    ids=lambda value: value.name if isinstance(value, ProbeTask) else value,
)
def test_each_broken_task_passes_the_checks_its_mistake_is_not_about(task, check):
    check_task(task, checks=[check])


def test_a_correct_task_of_ones_own_passes_the_whole_kit():
    check_task(ProbeTask("copy_of_mine", copy))
