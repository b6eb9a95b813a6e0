"""Learned absolute positions (BERT): ``x_i += P[i]`` with a trainable ``P[max_positions, H]``."""

from torch import Tensor, nn

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
        length = x.shape[1]  # within the table: Encoder.forward checks (check_positions_input)
        if positions is None:
            return x + self.table.weight[:length]
        return x + self.table(positions)
