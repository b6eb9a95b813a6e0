"""Packed documents kept apart: ``segment_ids`` through the seam, for every scheme.

With ``segment_ids`` a token attends only to its own segment and positions restart at each
segment, so every document of a packed block gets exactly the logits it gets alone. The
oracle is the model run on each document by itself. That check, over every registered
scheme and kernel, is the scheme kit's ``segments`` check (tests/test_scheme_kit.py); here
segments with padding, the FlexAttention path and the refusals.
"""

from __future__ import annotations

import pytest
import torch
from model_factory import VALID_PAIRS, small_model

from roformer_lit import ATTENTION_KERNELS
from roformer_lit.positions.base import segment_positions
from roformer_lit.testing.checks import PACKED_LENGTHS, packed_documents

SEGMENT_PAIRS = [(p, a) for p, a in VALID_PAIRS if ATTENTION_KERNELS[a].supports_segments]
NO_SEGMENT_KERNELS = [a for a, k in ATTENTION_KERNELS.items() if not k.supports_segments]


def test_segment_positions_restart_at_every_segment():
    ids = torch.tensor([[0, 0, 0, 1, 1, 2], [5, 5, 5, 5, 5, 5], [3, 1, 1, 3, 3, 3]])
    expected = torch.tensor([[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 4, 5], [0, 0, 1, 0, 1, 2]])
    assert torch.equal(segment_positions(ids), expected)


@pytest.mark.parametrize("position,attention", SEGMENT_PAIRS[:6])
def test_segments_and_padding_together(position, attention):
    """A padded batch of two packed blocks: the real tokens keep their lone-document logits."""
    model = small_model(position, attention, max_positions=32)
    documents, block, segments = packed_documents()
    padded = torch.cat([block, torch.zeros(1, 4, dtype=block.dtype)], dim=1)
    second = torch.cat([documents[1], documents[0], torch.zeros(1, 9, dtype=block.dtype)], 1)
    ids = torch.cat([padded, second])
    seg = torch.cat(
        [
            torch.cat([segments, torch.full((1, 4), 9)], 1),
            torch.tensor([[0] * 14 + [1] * 9 + [2] * 9]),
        ]
    )
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[0, -4:] = False
    mask[1, -9:] = False
    with torch.no_grad():
        out = model(ids, attention_mask=mask, segment_ids=seg)
        torch.testing.assert_close(out[1:, :14], model(documents[1]), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(out[1:, 14:23], model(documents[0]), rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("position", ["alibi", "t5", "kerple", "deberta"])
def test_flex_path_keeps_segments_apart(position):
    model = small_model(position, max_positions=32, attention_kwargs={"backend": "flex"})
    documents, block, segments = packed_documents()
    with torch.no_grad():
        packed = model(block, segment_ids=segments)
        torch.testing.assert_close(
            packed[:, : PACKED_LENGTHS[0]], model(documents[0]), rtol=1e-4, atol=1e-5
        )


@pytest.mark.parametrize("attention", NO_SEGMENT_KERNELS)
def test_a_kernel_without_segments_refuses_segment_ids(attention):
    """``data.document_mask`` with such a kernel is refused before anything is built, in
    one line naming the valid kernels (tests/test_data_modules.py); the network refuses
    the input with a ValueError naming the kernel (never an assertion: under ``python -O``
    the documents would silently attend to each other)."""
    model = small_model("nope", attention)
    _, block, segments = packed_documents()
    with pytest.raises(ValueError, match=f"{attention!r} cannot keep packed documents apart"):
        model(block, segment_ids=segments)


def test_mlm_loss_takes_segments():
    model = small_model("rope")
    _, block, segments = packed_documents()
    labels = torch.where(torch.arange(block.shape[1]) % 3 == 0, block, -100)
    with torch.no_grad():
        with_segments = model.mlm_loss(block, labels, segment_ids=segments)
        without = model.mlm_loss(block, labels)
    assert torch.isfinite(with_segments) and with_segments != without
