"""Fixed sinusoidal absolute positions (Vaswani et al. 2017), interleaved.

``PE[pos, 2t] = sin(pos / 10000^(2t/H))``, ``PE[pos, 2t+1] = cos(pos / 10000^(2t/H))``;
``x_pos = sqrt(H) * E[token] + PE[pos]`` (Vaswani et al. scale the embeddings by
``sqrt(d_model)``; without it a unit-amplitude table swamps BERT-initialised embeddings,
std 0.02, before the embedding LayerNorm). ``scale_embeddings=False`` gives
``E[token] + PE[pos]``. Extends to any length.
"""

import math

import torch
from torch import Tensor

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import EncoderShape, PositionScheme, rows_at, sinusoid_angles
from roformer_lit.validation import boolean, check, finite_float_above


def sinusoidal_table(length: int, dim: int, base: float = 10000.0) -> Tensor:
    """The interleaved table ``PE[length, dim]`` in float32."""
    angles = sinusoid_angles(torch.arange(length), dim, base)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)


def sinusoidal_rows(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """The table's rows at any ``positions`` (any shape, integer): ``[*positions.shape, dim]``."""
    angles = sinusoid_angles(positions.flatten(), dim, base)
    rows = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    return rows.unflatten(0, positions.shape)


class SinusoidalPosition(PositionScheme):
    """Adds the fixed interleaved sin/cos table, cached and grown on demand."""

    translation_invariant = False

    def __init__(
        self, shape: EncoderShape, *, base: float = 10000.0, scale_embeddings: bool = True
    ) -> None:
        super().__init__(shape)
        if shape.hidden_size % 2:
            raise ConfigError(
                f"sinusoidal positions need an even hidden_size, got {shape.hidden_size}"
            )
        check("sinusoidal base", base, finite_float_above(1), option="base")
        check("sinusoidal scale_embeddings", scale_embeddings, boolean, option="scale_embeddings")
        self.base = base
        self.embedding_scale = math.sqrt(shape.hidden_size) if scale_embeddings else 1.0
        self.register_buffer(
            "table",
            sinusoidal_table(shape.max_positions, shape.hidden_size, base),
            persistent=False,
        )

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        length = x.shape[1]
        if length > self.table.shape[0]:
            self.table = sinusoidal_table(length, self.shape.hidden_size, self.base).to(x.device)
        if positions is None:
            table = self.table[:length]
        else:
            hidden, base = self.shape.hidden_size, self.base
            table = rows_at(self.table, positions, lambda p: sinusoidal_rows(p, hidden, base))
        return x * self.embedding_scale + table.to(x.dtype)
