"""What a batch is: the one dictionary every data module yields and the model reads.

Every pretraining data module (corpus blocks, position tasks) yields a :class:`Batch`:

- ``input_ids`` ``LongTensor[B, L]``: token ids, ``[MASK]`` where the model must predict;
- ``labels`` ``LongTensor[B, L]``: the token to predict, :data:`IGNORE_INDEX` elsewhere
  (the loss and the metrics read only labelled positions);
- ``attention_mask`` ``[B, L]`` (optional): 1 for real tokens, 0 for padding;
- ``segment_ids`` ``LongTensor[B, L]`` (optional, ``data.document_mask``): which document of
  a packed block each token belongs to; attention stays within a document;
- ``position_ids`` ``LongTensor[B, L]`` (optional, randomized positions): where each token
  sits, increasing (and so distinct) along a row;
- ``whole_answers`` ``BoolTensor[B]`` (optional, position tasks' evaluation sequences): the
  labelled tokens of each row are one answer, so exact match (every one of them right) is a
  score of the row; the module logs ``val/exact`` only for batches that carry it (on a
  corpus it would be the share of blocks with no wrong token, which means nothing).

:func:`placement` is the one place that reads the optional keys, in the order the model's
``forward`` takes them.
"""

from __future__ import annotations

from typing import NamedTuple, TypedDict

from torch import Tensor

#: The label of a position the model is not asked to predict (PyTorch's cross-entropy default).
IGNORE_INDEX = -100


class Batch(TypedDict, total=False):
    """A pretraining batch (module docstring)."""

    input_ids: Tensor
    labels: Tensor
    attention_mask: Tensor
    segment_ids: Tensor
    position_ids: Tensor
    whole_answers: Tensor


class Placement(NamedTuple):
    """Where a batch's tokens sit: padding, documents and positions (each optional)."""

    attention_mask: Tensor | None
    segment_ids: Tensor | None
    position_ids: Tensor | None


def placement(batch: Batch) -> Placement:
    """The optional keys of ``batch``, ``None`` where absent."""
    return Placement(
        batch.get("attention_mask"), batch.get("segment_ids"), batch.get("position_ids")
    )
