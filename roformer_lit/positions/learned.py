"""Learned absolute positions (BERT): ``x_i += P[i]`` with a trainable ``P[max_positions, H]``."""

from torch import Tensor, nn

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import EncoderShape, PositionScheme


class LearnedPosition(PositionScheme):
    """A trainable table; it cannot encode positions past ``max_positions``."""

    translation_invariant = False

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__(shape)
        self.table = nn.Embedding(shape.max_positions, shape.hidden_size)

    @property
    def max_length(self) -> int:
        return self.shape.max_positions

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        length = x.shape[1]
        if length > self.shape.max_positions:
            raise ConfigError(
                f"sequence length {length} exceeds max_positions={self.shape.max_positions} of "
                "the 'learned' position table; raise model.max_positions or use a scheme that "
                "extends (nope, sinusoidal, rope, xl, deberta)"
            )
        if positions is None:
            return x + self.table.weight[:length]
        return x + self.table(positions)
