"""A window that reaches every token of the training sequences is said, in one note.

A layer type with ``window: w`` is global wherever ``w // 2 >= L - 1``
(:func:`~roformer_lit.attention.window.band_half_width`), so the ModernBERT recipe at
``data.max_length 64`` (window 128) trained its "local" layers as global ones, bit for bit,
in a run named for its windows, without a word. ``fit``'s pre-launch check now says so in
one ``note:`` line per such type (not refused: the window restricts the same weights at a
longer evaluation); a window that restricts, and an evaluation, say nothing.
"""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands import prelaunch
from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.commands.pretrain import validate_config

MODERNBERT = ["--config", str(CONFIGS / "recipes" / "modernbert.yaml")]  # window 128
COPY = ["--config", str(CONFIGS / "probes" / "copy.yaml")]  # max_length 33


def plan(window: int) -> list[str]:
    return [
        "--model.layer_plan",
        f"{{pattern: [local, global], types: {{local: {{window: {window}}}}}}}",
    ]


#: case -> (arguments, words of the one note line; None: no note).
CASES: dict[str, tuple[list[str], list[str] | None]] = {
    "recipe at 64 tokens": (
        [*MODERNBERT, "--data.max_length", "64"],
        ["type 'local'", "window 128", "64 tokens each side", "max_length=64", "global"],
    ),
    "recipe at 65 tokens (64 each side reach 64)": (
        [*MODERNBERT, "--data.max_length", "65"],
        ["type 'local'", "window 128", "max_length=65", "below 128"],
    ),
    "copy, window 64 over 33 tokens": (
        [*COPY, *plan(64)],
        ["type 'local'", "window 64", "max_length=33", "below 64"],
    ),
    "copy, window 65 (the same layer as 64)": (
        [*COPY, *plan(65)],
        ["window 65", "32 tokens each side", "max_length=33"],
    ),
    "recipe at 66 tokens": ([*MODERNBERT, "--data.max_length", "66"], None),
    "recipe as shipped (512 tokens)": (MODERNBERT, None),
    "copy, window 62 (31 each side)": ([*COPY, *plan(62)], None),
    "no plan": (COPY, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_window_past_every_training_token_is_noted_once(case, capsys, monkeypatch):
    monkeypatch.setattr(prelaunch, "_noted", set())
    arguments, words = CASES[case]
    check_fit_config(validate_config(arguments, prelaunch=False))
    notes = [line for line in capsys.readouterr().err.splitlines() if "window" in line]
    if words is None:
        assert notes == []
        return
    assert len(notes) == 1 and notes[0].startswith("note: "), notes
    assert all(word in notes[0] for word in words), notes[0]


def test_an_evaluation_is_not_noted(capsys, monkeypatch):
    monkeypatch.setattr(prelaunch, "_noted", set())
    arguments, _ = CASES["recipe at 64 tokens"]
    check_fit_config(validate_config(arguments, prelaunch=False), training=False)
    assert "window" not in capsys.readouterr().err
