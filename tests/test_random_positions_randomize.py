"""Randomized positions that every training sequence fills randomize nothing: refused.

``L`` distinct positions drawn from ``[0, R)`` and sorted are ``0 .. L-1`` when ``R = L``,
so a run with ``data.random_positions`` equal to the length of every training sequence (a
corpus block's ``max_length``; a position task whose shortest sequence is ``R`` tokens)
trained on the ordinary positions under a name saying ``rp<R>``, exit 0. The pre-launch
check of ``fit`` refuses it in one line (the data class's
:meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_training_settings`); an
evaluation at such a length (``validate``, ``extrapolate --positions random``) is not a
run that trains and stays allowed.
"""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.errors import ConfigError

COPY = ["--config", str(CONFIGS / "probes" / "copy.yaml")]  # n in 8..16, max_length 33
RECALL = ["--config", str(CONFIGS / "probes" / "recall.yaml")]
ROPE = ["--config", str(CONFIGS / "rope.yaml")]  # max_length 128

#: case -> (arguments, words of the one refusal line; None: accepted).
CASES: dict[str, tuple[list[str], list[str] | None]] = {
    "corpus, R = max_length": (
        [*ROPE, "--data.random_positions", "128"],
        ["data.random_positions=128", "randomizes nothing", "max_length=128", "> 128"],
    ),
    "corpus, R = max_length (64)": (
        [*ROPE, "--data.max_length", "64", "--data.random_positions", "64"],
        ["data.random_positions=64", "randomizes nothing", "> 64"],
    ),
    "copy, one input length filling R": (
        [*COPY, "--data.probe_min_length", "16", "--data.random_positions", "33"],
        ["data.random_positions=33", "'copy'", "probe_min_length=16", "> 33"],
    ),
    "recall, one input length filling R": (
        [
            *RECALL,
            "--data.probe_min_length",
            "8",
            "--data.probe_max_length",
            "8",
            "--data.max_length",
            "33",
            "--data.random_positions",
            "33",
        ],
        ["data.random_positions=33", "'recall'", "> 33"],
    ),
    "corpus, R = max_length + 1": ([*ROPE, "--data.random_positions", "129"], None),
    "copy, shorter sequences than R": ([*COPY, "--data.random_positions", "33"], None),
    "copy, one input length under R": (
        [*COPY, "--data.probe_min_length", "16", "--data.random_positions", "34"],
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_random_positions_that_cannot_randomize_are_refused_before_a_run(case):
    arguments, words = CASES[case]
    parsed = validate_config(arguments, prelaunch=False)
    if words is None:
        check_fit_config(parsed)
        return
    with pytest.raises(ConfigError) as info:
        check_fit_config(parsed)
    line = str(info.value)
    assert "\n" not in line and all(word in line for word in words), line


@pytest.mark.parametrize(
    "case", [case for case, (_, words) in sorted(CASES.items()) if words is not None]
)
def test_an_evaluation_at_that_length_is_not_refused(case):
    """``validate`` (no training) of a run's settings at ``R = L`` evaluates as ever."""
    parsed = validate_config(CASES[case][0], prelaunch=False)
    check_fit_config(parsed, training=False)
