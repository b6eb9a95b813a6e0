"""No position information: a control. Softmax attention is then permutation-equivariant."""

from roformer_lit.positions.base import PositionScheme


class NoPosition(PositionScheme):
    """``x_i`` is the token embedding alone; every hook is the identity."""

    reads_positions = False
