"""The registry of position schemes: short name -> class. One file per scheme.

Built-ins are one line each below; a user's scheme is found by import path
(``my_pkg.schemes:CoPE``) or by an installed distribution's entry point in the group
``roformer_lit.positions`` (:class:`~roformer_lit.registry.Registry`).
"""

from roformer_lit.positions.alibi import AlibiPosition
from roformer_lit.positions.base import EncoderShape, LayerPosition, PositionScheme, ScoreBias
from roformer_lit.positions.deberta import DebertaPosition
from roformer_lit.positions.fire import FirePosition
from roformer_lit.positions.kerple import KerplePosition
from roformer_lit.positions.learned import LearnedPosition
from roformer_lit.positions.nope import NoPosition
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.positions.sinusoidal import SinusoidalPosition
from roformer_lit.positions.t5 import T5Position
from roformer_lit.positions.xl import TransformerXLPosition
from roformer_lit.registry import Registry, subclass_of

POSITION_SCHEMES: Registry[type[PositionScheme]] = Registry(
    "position",
    "subclass of roformer_lit.positions.base.PositionScheme",
    subclass_of(PositionScheme),
    {
        "nope": NoPosition,
        "learned": LearnedPosition,
        "sinusoidal": SinusoidalPosition,
        "xl": TransformerXLPosition,
        "deberta": DebertaPosition,
        "rope": RotaryPosition,
        "alibi": AlibiPosition,
        "kerple": KerplePosition,
        "t5": T5Position,
        "fire": FirePosition,
    },
    group="roformer_lit.positions",
)

__all__ = ["POSITION_SCHEMES", "EncoderShape", "LayerPosition", "PositionScheme", "ScoreBias"]
