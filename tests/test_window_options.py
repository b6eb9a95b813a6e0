"""A kernel option that acts only in some layers, given where no layer it reaches is one, is
refused in one line: softmax's ``window_block`` (windowed layers), ``bias_block`` and
``bias_block_from`` (layers whose scheme adds a score bias).

``--model.attention_kwargs '{window_block: 64}'`` on a model without windows changed
nothing the run computed but its name (``rope-softmax-seed0-copy-window_block64``, the
same experiment as ``rope-softmax-seed0-copy``), exit 0. As ``data.random_positions``
with no scheme that reads positions, it is now refused by ``fit``'s pre-launch check
(and ``sweep``'s), naming the setting, its value and the layers' types; where some layer
it reaches has a window, it is taken. A checkpoint written with it still loads (the rule
is a new run's, not the architecture's).
"""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands import prelaunch
from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError

COPY = ["--config", str(CONFIGS / "probes" / "copy.yaml"), "--model.num_layers", "2"]
BLOCK = ["--model.attention_kwargs", "{window_block: 64}"]


def plan(text: str) -> list[str]:
    return ["--model.layer_plan", text]


#: case -> (arguments, words of the one error line; None: accepted).
CASES: dict[str, tuple[list[str], list[str] | None]] = {
    "no plan": (BLOCK, ["model.attention_kwargs.window_block=64", "no model.layer_plan"]),
    "a plan without windows": (
        [*BLOCK, *plan("{pattern: [a, b], types: {a: {}, b: {position: nope}}}")],
        ["model.attention_kwargs.window_block=64", "a (rope, global), b (nope, global)"],
    ),
    "a global type's own": (
        plan(
            "{pattern: [l, g], types: {l: {window: 8}, g: {attention_kwargs: {window_block: 16}}}}"
        ),
        ["model.layer_plan.types.g.attention_kwargs.window_block=16", "l (rope, window 8)"],
    ),
    "the recipe's plan": (
        ["--config", str(CONFIGS / "recipes" / "modernbert.yaml"), *BLOCK],
        None,
    ),
    "a windowed layer it reaches": (
        [*BLOCK, *plan("{pattern: [l, g], types: {l: {window: 8}, g: {}}}")],
        None,
    ),
    "bias_block with a scheme that adds no bias": (
        ["--model.attention_kwargs", "{bias_block: 32}"],
        ["model.attention_kwargs.bias_block=32", "score bias", "every layer: rope, global"],
    ),
    "bias_block_from in a plan of rope and nope": (
        [
            "--model.attention_kwargs",
            "{bias_block_from: 256}",
            *plan("{pattern: [l, g], types: {l: {window: 8}, g: {position: nope}}}"),
        ],
        ["model.attention_kwargs.bias_block_from=256", "g (nope, global)"],
    ),
    "bias_block with alibi": (
        ["--model.position", "alibi", "--model.attention_kwargs", "{bias_block: 32}"],
        None,
    ),
    "bias_block with one alibi layer": (
        [
            "--model.attention_kwargs",
            "{bias_block: 32}",
            *plan("{pattern: [l, g], types: {g: {position: alibi}}}"),
        ],
        None,
    ),
    "a windowed type's own": (
        plan("{pattern: [l, g], types: {l: {window: 8, attention_kwargs: {window_block: 4}}}}"),
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_window_option_that_reaches_no_window_is_refused(case, monkeypatch):
    monkeypatch.setattr(prelaunch, "_noted", set())
    arguments, words = CASES[case]
    config = validate_config([*COPY, *arguments], prelaunch=False)
    if words is None:
        check_fit_config(config)
        return
    with pytest.raises(ConfigError) as raised:
        check_fit_config(config)
    message = str(raised.value)
    assert "\n" not in message and "acts only in a layer with a" in message, message
    assert all(word in message for word in words), message


def test_a_model_written_with_it_still_builds():
    """The architecture takes it (a checkpoint of such a run still loads)."""
    assert EncoderConfig(position="rope", attention_kwargs={"window_block": 64}).layers
