"""A plan that builds another layer than its words say is said, in one ``note:`` line.

- A ``pattern`` (or ``layers``) name that ``types`` does not define is a plain global
  layer, as documented; but ``pattern: [local, locl]`` with ``types: {local: ...}``
  trained its second layer as global, in a run named ``local8-locl``, without a word. ``fit`` now
  names each such name other than ``global`` and the defined types.
- A window ``2k + 1`` reads the keys within ``k`` each side (``w // 2``, ModernBERT's
  ``local_attention``), the layer ``2k`` builds, so two runs named ``local65`` and
  ``local64`` were one experiment. ``fit`` now says which keys the window reads.

Neither is refused: both build what the documentation promises (and what ModernBERT's
``local_attention`` builds), and checkpoints written so still load.
"""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands import prelaunch
from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.commands.pretrain import validate_config

COPY = ["--config", str(CONFIGS / "probes" / "copy.yaml")]  # max_length 33, 2 layers


def plan(text: str) -> list[str]:
    return [*COPY, "--model.num_layers", "2", "--model.layer_plan", text]


#: case -> (arguments, words of the one note line; None: no note).
CASES: dict[str, tuple[list[str], list[str] | None]] = {
    "a typo for a defined type": (
        plan("{pattern: [local, locl], types: {local: {window: 8}}}"),
        ["'locl'", "not defined", "global", "'local'"],
    ),
    "an undefined name in layers": (
        plan("{layers: [local, glob], types: {local: {window: 8}}}"),
        ["'glob'", "not defined", "'local'"],
    ),
    "no types at all": (plan("{pattern: [loc]}"), ["'loc'", "defined types: none"]),
    "global left undefined": (
        plan("{pattern: [local, global], types: {local: {window: 8}}}"),
        None,
    ),
    "every name defined": (
        plan("{pattern: [l, g], types: {l: {window: 8}, g: {}}}"),
        None,
    ),
    "window 9 (4 each side, as 8)": (
        plan("{pattern: [local, global], types: {local: {window: 9}}}"),
        ["window 9", "4 tokens each side", "9 keys", "window 8", "local_attention"],
    ),
    "window 129 in the recipe's plan": (
        [
            "--config",
            str(CONFIGS / "recipes" / "modernbert.yaml"),
            "--model.layer_plan",
            "{pattern: [global, local, local], types: {local: {window: 129}}}",
        ],
        ["window 129", "64 tokens each side", "window 128"],
    ),
    "window 8": (plan("{pattern: [local, global], types: {local: {window: 8}}}"), None),
    "window 1 (the query alone)": (
        plan("{pattern: [local, global], types: {local: {window: 1}}}"),
        None,
    ),
    "no plan": (COPY, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_plan_that_builds_other_layers_than_it_says_is_noted_once(case, capsys, monkeypatch):
    monkeypatch.setattr(prelaunch, "_noted", set())
    arguments, words = CASES[case]
    check_fit_config(validate_config(arguments, prelaunch=False))
    notes = [line for line in capsys.readouterr().err.splitlines() if "layer_plan" in line]
    if words is None:
        assert notes == []
        return
    assert len(notes) == 1 and notes[0].startswith("note: "), notes
    assert all(word in notes[0] for word in words), notes[0]
