"""An option written at its class's default is no option of the model, read one way.

``EncoderConfig`` (:func:`~roformer_lit.encoder_config.canonical_fields`) and ``compare``'s
labels each dropped options at their default with their own function, and the two read a
default differently: a scheme whose float option's default is written ``1`` (an int)
given ``scale: 1.0`` kept it as the model's own option (another config, another digest)
while ``compare`` dropped it as the default (one variant). Both now read
:func:`~roformer_lit.encoder_config.own_options`; ``compare`` writes its numbers as
:func:`~roformer_lit.plan_identity.number` does, a separate step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from roformer_lit import POSITION_SCHEMES
from roformer_lit.encoder_config import canonical_model
from roformer_lit.plan_identity import number, plain
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.results.compare.variants import comparable


class ScaledRope(RotaryPosition):
    """Rope with a float option whose default is written as an int (``1``), as a
    plugin's author may write it."""

    def __init__(self, *args: Any, scale: float = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scale = scale


@pytest.fixture
def scaled_rope() -> Iterator[str]:
    POSITION_SCHEMES.register("scaled_rope_test", ScaledRope)
    try:
        yield "scaled_rope_test"
    finally:
        POSITION_SCHEMES.unregister("scaled_rope_test")


#: Spellings of the plugin's default -> (a scheme, None: the plugin above; its options;
#: whether they are its defaults).
OPTIONS: dict[str, tuple[str | None, dict[str, Any], bool]] = {
    "a plugin's float option at its int default, written as a float": (None, {"scale": 1.0}, True),
    "a plugin's float option at its int default, written as an int": (None, {"scale": 1}, True),
    "a plugin's float option at its int default, written as text": (None, {"scale": "1"}, True),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_the_config_and_compare_read_an_option_at_its_default_alike(case, scaled_rope):
    name, options, at_default = OPTIONS[case]
    model = {"position": name or scaled_rope, "position_kwargs": options}
    bare = {"position": name or scaled_rope, "position_kwargs": {}}
    held = canonical_model(model)["position_kwargs"]
    labelled = comparable(model)["position_kwargs"]
    assert (held is None) is at_default, held
    assert (labelled == comparable(bare)["position_kwargs"]) is at_default, labelled
    assert number(plain(held or {})) == labelled  # one reading, numbers written apart
