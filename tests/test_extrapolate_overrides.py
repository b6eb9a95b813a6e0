"""``extrapolate --position_kwargs`` on a model with a layer plan: an option acts on the
layers it reaches or on the types it names, and one that reaches no layer is refused in one
line (:mod:`roformer_lit.results.extrapolate_overrides`)."""

from __future__ import annotations

import pytest
import torch

from roformer_lit.errors import ConfigError
from roformer_lit.layer_plan import resolve_plan
from roformer_lit.module import MaskedLM
from roformer_lit.results.extrapolate import with_position_kwargs

SMALL = {"hidden_size": 32, "num_layers": 3, "num_heads": 2, "intermediate_size": 64}
#: The ModernBERT recipe's plan: every type sets its own base.
OWN_BASES = {
    "pattern": ["global", "local", "local"],
    "types": {
        "global": {"position_kwargs": {"base": 160000.0}},
        "local": {"window": 4, "position_kwargs": {"base": 10000.0}},
    },
}
#: A plan whose global type is position-free and whose local type takes the model's options.
MIXED = {
    "pattern": ["global", "local", "local"],
    "types": {"global": {"position": "nope"}, "local": {"window": 4}},
}

#: (plan, override, each layer's base afterwards; None: refused).
CASES = {
    "no plan: every layer": (None, {"base": 500}, [500, 500, 500]),
    "every type sets its own: refused": (OWN_BASES, {"base": 500}, None),
    "a type named": (OWN_BASES, {"global": {"base": 500}}, [500, 10000, 10000]),
    "the layers it reaches": (MIXED, {"base": 500}, [None, 500, 500]),
    "one type position-free, the other its own: refused": (
        {
            "pattern": ["global", "local", "local"],
            "types": {"global": {"position": "nope"}, "local": {"position_kwargs": {"base": 9}}},
        },
        {"base": 500},
        None,
    ),
}


def model(plan) -> MaskedLM:
    torch.manual_seed(0)
    return MaskedLM(position="rope", vocab_size=40, layer_plan=plan, **SMALL).eval()


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_override_acts_where_it_reaches_or_is_refused(case, capsys):
    plan, override, bases = CASES[case]
    original = model(plan)
    if bases is None:
        with pytest.raises(ConfigError) as info:
            with_position_kwargs(original, override, "run.ckpt")
        line = str(info.value)
        assert "\n" not in line and "reaches no layer" in line and "base=500" in line
        return
    rebuilt = with_position_kwargs(original, override, "run.ckpt")
    hp = rebuilt.hparams
    layers = resolve_plan(hp.get("layer_plan"), 3, hp["position"], hp.get("position_kwargs"))
    got = [spec.position_kwargs.get("base") if spec.position == "rope" else None for spec in layers]
    assert got == bases
    ids = torch.randint(0, 40, (1, 12))
    with torch.no_grad():
        assert not torch.allclose(original(ids), rebuilt(ids))  # the override did something
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == (1 if None in bases else 0), notes


@pytest.mark.parametrize("plan", [OWN_BASES, MIXED], ids=["own bases", "mixed"])
@pytest.mark.parametrize("override", [{"nosuch": {"base": 5}}, {"nosuch": 5}])
def test_a_key_neither_an_option_nor_a_type_names_both_kinds_of_key(plan, override):
    with pytest.raises(ConfigError) as info:
        with_position_kwargs(model(plan), override, "run.ckpt")
    line = str(info.value)
    assert "\n" not in line and "'nosuch'" in line, line
    assert "rotary_fraction" in line and "global, local" in line, line  # an option, the types


#: (plan, an override of nothing, words of its one refusal line).
NOTHING = {
    "no plan, {}": (None, {}, ["--position_kwargs {}", "overrides nothing"]),
    "a plan, {}": (MIXED, {}, ["--position_kwargs {}", "overrides nothing"]),
    "a type given {}": (OWN_BASES, {"global": {}}, ["global={}", "layer type 'global'"]),
    "a type given {} beside a real override": (
        MIXED,
        {"base": 500, "local": {}},
        ["local={}", "layer type 'local'"],
    ),
}


@pytest.mark.parametrize("case", sorted(NOTHING))
def test_an_override_of_nothing_is_refused(case):
    """``{}`` or ``{global: {}}`` evaluated the run unchanged under a row labelled with the
    override (``rope {'global': {}}``), exit 0."""
    plan, override, words = NOTHING[case]
    with pytest.raises(ConfigError) as info:
        with_position_kwargs(model(plan), override, "run.ckpt")
    line = str(info.value)
    assert "\n" not in line and line.startswith("run.ckpt: "), line
    assert all(word in line for word in words), line
