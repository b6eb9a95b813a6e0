"""The registry of position schemes: short name -> class. One file per scheme."""

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

POSITION_SCHEMES: dict[str, type[PositionScheme]] = {
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
}

__all__ = ["POSITION_SCHEMES", "EncoderShape", "LayerPosition", "PositionScheme", "ScoreBias"]
