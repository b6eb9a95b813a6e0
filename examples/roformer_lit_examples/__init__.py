"""Position schemes of the field written as roformer-lit plugins, outside the package.

- :class:`~roformer_lit_examples.cope.CoPE`: contextual position encoding (Golovneva et al.
  2024), positions counted by gates computed from the query-key scores;
- :class:`~roformer_lit_examples.ssmax.ScalableSoftmax`: scalable softmax (Nakanishi 2025),
  scores multiplied by ``s_h log n``, over another scheme.

Each subclasses the public ``roformer_lit.positions.base.PositionScheme``, gives a float64
``reference`` of its paper's formula, and passes ``roformer_lit.testing.check_scheme``.
"""

from roformer_lit_examples.cope import CoPE
from roformer_lit_examples.ssmax import ScalableSoftmax

__all__ = ["CoPE", "ScalableSoftmax"]
