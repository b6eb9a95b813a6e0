"""The position tasks' trivial baselines (:mod:`roformer_lit.data.probes.baselines`) against a
slow per-sequence computation over the same validation sequences, and ``nope`` against its
majority baseline."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch

from roformer_lit.data.probes import PROBE_TASKS, ProbeValidation, baseline_scores

SYMBOLS = 16


def slow_scores(task_name: str, input_ids: np.ndarray, labels: np.ndarray) -> dict[str, tuple]:
    """Each rule, sequence by sequence and slot by slot, in plain Python (float64)."""
    low, high = (SYMBOLS // 2, SYMBOLS) if task_name == "recall" else (0, SYMBOLS)
    totals: dict[str, list[float]] = {"majority": [], "uniform": [], "relative_place": []}
    exact: dict[str, list[float]] = {k: [] for k in totals}
    for ids, labs in zip(input_ids.tolist(), labels.tolist(), strict=True):
        sep = ids.index(2)
        inputs = [t - 3 for t in ids[:sep] if low <= t - 3 < high]
        counts = Counter(inputs)
        best = max(counts.values())
        mode = min(s for s, c in counts.items() if c == best)
        answers = [lab - 3 for lab in labs if lab != -100]
        m = len(answers)
        guesses = {
            "majority": [1.0 if a == mode else 0.0 for a in answers],
            "uniform": [1.0 / (high - low)] * m,
            "relative_place": [
                1.0 if a == int((j + 0.5) * SYMBOLS / m) else 0.0 for j, a in enumerate(answers)
            ],
        }
        for rule, right in guesses.items():
            totals[rule].extend(right)
            exact[rule].append(math.prod(right))
    return {
        rule: (sum(totals[rule]) / len(totals[rule]), sum(exact[rule]) / len(exact[rule]))
        for rule in totals
    }


@pytest.mark.parametrize("task_name", sorted(PROBE_TASKS))
@pytest.mark.parametrize("length", [3, 8, 24])
def test_baselines_match_a_slow_computation(task_name: str, length: int) -> None:
    task = PROBE_TASKS[task_name]
    if task.longest(SYMBOLS) is not None and length > task.longest(SYMBOLS):
        length = task.longest(SYMBOLS)
    data = ProbeValidation(task, symbols=SYMBOLS, length=length, count=64, seed=3)
    scores = baseline_scores(task, data.input_ids.numpy(), data.labels.numpy(), SYMBOLS)
    assert "majority" in [s.rule for s in scores] and "uniform" in [s.rule for s in scores]
    slow = slow_scores(task_name, data.input_ids.numpy(), data.labels.numpy())
    for score in scores:
        assert (score.acc, score.exact) == pytest.approx(slow[score.rule], abs=1e-12)


def test_sort_relative_place_is_the_issue_s_numbers() -> None:
    """The input-independent rule on sort scores ~0.38 / 0.48 / 0.60 / 0.70 at 2x..16x of 16."""
    task = PROBE_TASKS["sort"]
    got = []
    for n in (32, 64, 128, 256):
        data = ProbeValidation(task, symbols=SYMBOLS, length=n, count=256, seed=0)
        scores = baseline_scores(task, data.input_ids.numpy(), data.labels.numpy(), SYMBOLS)
        got.append(next(s.acc for s in scores if s.rule == "relative_place"))
    assert got == pytest.approx([0.38, 0.48, 0.60, 0.70], abs=0.015)


def test_an_untrained_nope_model_never_beats_majority_on_copy() -> None:
    """Without positions every [MASK] slot gets the same prediction, so on ``copy`` (answers:
    the inputs) no weights can beat the sequence's majority symbol: checked per sequence."""
    from roformer_lit.module import MaskedLM

    torch.manual_seed(0)
    task = PROBE_TASKS["copy"]
    data = ProbeValidation(task, symbols=SYMBOLS, length=12, count=32, seed=0)
    model = MaskedLM(
        vocab_size=3 + SYMBOLS,
        position="nope",
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        intermediate_size=64,
        dropout=0.0,
        attention_dropout=0.0,
    ).eval()
    with torch.no_grad():
        logits = model(data.input_ids)
    logits = logits if isinstance(logits, torch.Tensor) else logits["logits"]
    slots = data.labels != -100
    predicted = logits.argmax(-1)
    for row in range(data.input_ids.shape[0]):
        picks = predicted[row][slots[row]]
        assert len(set(picks.tolist())) == 1  # one prediction for every slot
        right = (picks == data.labels[row][slots[row]]).double().mean().item()
        one = baseline_scores(
            task, data.input_ids[row : row + 1].numpy(), data.labels[row : row + 1].numpy(), SYMBOLS
        )
        assert right <= one[0].acc + 1e-12
