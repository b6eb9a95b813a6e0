"""``recall``'s "guess among the values present" baseline, scored on the test sequences the
runs were evaluated on.

The rule: for every answer slot, guess uniformly among the distinct values of the sequence's
key-value pairs (a model that can find the values but not the key's). Per slot it is right
with probability ``1 / D``, ``D`` the number of distinct values present; its accuracy is the
mean of ``1 / D`` over slots, its exact match the mean over sequences of ``D^-n`` (``n``
independent guesses). ``extrapolate --csv`` does not write this rule, so it is computed here
from the test sequences (``ProbeValidation(stream="test")``, regenerated from ``data.seed``)
and refused unless the same sequences give the file's own ``majority`` rows exactly, so it
is scored on the very sequences of the table.
"""

from __future__ import annotations

import numpy as np

from roformer_lit.data.probes.baselines import baseline_scores
from roformer_lit.data.probes.dataset import ProbeValidation
from roformer_lit.data.probes.tasks import FIRST_SYMBOL, PROBE_TASKS, SEP_ID
from roformer_lit.errors import ConfigError

RULE = "values present"
#: The test sequences per length ``extrapolate`` scores (the validation set's count).
COUNT = 256
DATA_SEED = 0


def present_scores(input_ids: np.ndarray) -> tuple[float, float]:
    """(accuracy, exact match) of the rule on ``recall`` sequences ``[B, L]``."""
    sep = int(np.argmax(input_ids[0] == SEP_ID))
    values = input_ids[:, 1:sep:2] - FIRST_SYMBOL
    n = values.shape[1]
    distinct = np.array([len(set(row.tolist())) for row in values], dtype=np.float64)
    return float(np.mean(1.0 / distinct)), float(np.mean(distinct**-n))


def add_present(baselines: dict, symbols: int, lengths: list[int], where: str) -> None:
    """Add the rule's ``(task, RULE, n)`` accuracy to ``baselines`` (the study's ``recall``
    rows) at each of ``lengths``; ConfigError if the regenerated sequences' majority rule
    differs from the file's (``where``)."""
    task = PROBE_TASKS["recall"]
    for n in lengths:
        if ("recall", "majority", n) not in baselines:
            continue
        data = ProbeValidation(
            task, symbols=symbols, length=n, count=COUNT, seed=DATA_SEED, stream="test"
        )
        ids, labels = data.input_ids.numpy(), data.labels.numpy()
        majority = {s.rule: s.acc for s in baseline_scores(task, ids, labels, symbols)}["majority"]
        if majority != baselines[("recall", "majority", n)]:
            raise ConfigError(
                f"{where}: the regenerated test sequences at n={n} give a majority baseline of "
                f"{majority}, the file {baselines[('recall', 'majority', n)]}: not the same "
                "sequences"
            )
        baselines[("recall", RULE, n)] = present_scores(ids)[0]
